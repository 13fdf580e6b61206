//! The snapshot a plugin keeps between passes: the host sends each pass as a
//! change (strings added to the table, the queue's and the usage's edits,
//! the running tasks and GPUs whole), and the SDK applies it to the records
//! it kept, so a pass where little changed costs little. Policies see the
//! same [`Snapshot`] as ever.

use crate::abi;
use crate::snapshot::{Gpu, QueuedTask, RunningTask, Snapshot, Usage, priority, said};

/// What a plugin holds between passes.
pub(crate) struct Kept {
    /// The generation held; 0: nothing.
    generation: u64,
    /// The records. Their text borrows from `chunks`: `'static` is a lie
    /// told only inside this type, which hands the snapshot out borrowed
    /// from itself (see [`Kept::snapshot`]) and clears it before the
    /// chunks it borrows from are dropped.
    snapshot: Snapshot<'static>,
    /// String `i` of the table.
    texts: Vec<&'static str>,
    /// The text of every change since the last change from nothing, each
    /// never changed once kept (a `String`'s bytes stay where they are when
    /// the `String` moves or the `Vec` holding it grows). Not `Box<str>`:
    /// moving a `Box` asserts it is the only pointer to its bytes, which
    /// the references in `texts` already are (Miri: undefined behaviour).
    chunks: Vec<String>,
}

/// Why a change could not be applied; the plugin then holds nothing and
/// answers generation 0, and the host sends the whole snapshot.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NotHeld;

impl Kept {
    /// Nothing held.
    pub(crate) const fn new() -> Kept {
        Kept {
            generation: 0,
            snapshot: Snapshot {
                now: 0,
                time_zone: "",
                utc_offset: 0,
                queue: Vec::new(),
                running: Vec::new(),
                gpus: Vec::new(),
                usage: Vec::new(),
            },
            texts: Vec::new(),
            chunks: Vec::new(),
        }
    }

    /// The generation held (0: none).
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The snapshot held, borrowed for no longer than `self` is.
    pub(crate) fn snapshot(&self) -> &Snapshot<'_> {
        &self.snapshot
    }

    /// Forgets everything: the records first, then the text they borrow.
    fn clear(&mut self) {
        self.generation = 0;
        self.snapshot.queue.clear();
        self.snapshot.usage.clear();
        self.snapshot.running.clear();
        self.snapshot.gpus.clear();
        self.snapshot.time_zone = "";
        self.texts.clear();
        self.chunks.clear();
    }

    /// Applies `c`. On any mismatch (a base not held, an edit that does not
    /// fit) nothing is held afterwards.
    pub(crate) fn apply(&mut self, c: abi::Snapshot) -> Result<(), NotHeld> {
        if c.base == 0 {
            self.clear();
        } else if c.base != self.generation {
            self.clear();
            return Err(NotHeld);
        }
        let applied = self.apply_held(c);
        if applied.is_err() {
            self.clear();
        }
        applied
    }

    fn apply_held(&mut self, c: abi::Snapshot) -> Result<(), NotHeld> {
        self.add_strings(c.strings);
        let text = |i: u32| self.texts.get(i as usize).copied().unwrap_or("");
        let q = &c.queue.added;
        let n = q.id.len();
        let columns = [
            q.name.len(),
            q.project.len(),
            q.priority.len(),
            q.gpus.len(),
            q.gpu_mem.len(),
            q.submitted_at.len(),
            q.eligible_at.len(),
            q.attempts.len(),
            q.estimated_runtime.len(),
        ];
        if columns.iter().any(|&len| len != n) {
            return Err(NotHeld);
        }
        let added = (0..n).map(|i| QueuedTask {
            id: q.id[i],
            name: text(q.name[i]),
            project: text(q.project[i]),
            priority: priority(q.priority[i]),
            gpus: q.gpus[i],
            gpu_mem: said(q.gpu_mem[i]),
            submitted_at: q.submitted_at[i],
            eligible_at: q.eligible_at[i],
            attempts: q.attempts[i],
            estimated_runtime: said(q.estimated_runtime[i]),
        });
        let edit = &c.queue.edit;
        edit_list(
            &mut self.snapshot.queue,
            &edit.removed,
            &edit.added_at,
            added,
        )?;
        let u = &c.usage.added;
        let m = u.project.len();
        if [u.gpus.len(), u.started_at.len(), u.ended_at.len()]
            .iter()
            .any(|&len| len != m)
        {
            return Err(NotHeld);
        }
        let added = (0..m).map(|i| Usage {
            project: text(u.project[i]),
            gpus: u.gpus[i],
            started_at: u.started_at[i],
            ended_at: (u.ended_at[i] != 0).then_some(u.ended_at[i]),
        });
        let edit = &c.usage.edit;
        edit_list(
            &mut self.snapshot.usage,
            &edit.removed,
            &edit.added_at,
            added,
        )?;
        let s = &mut self.snapshot;
        s.now = c.now;
        s.time_zone = text(c.time_zone);
        s.utc_offset = c.utc_offset;
        s.running = c
            .running
            .into_iter()
            .map(|r| RunningTask {
                id: r.id,
                name: text(r.name),
                project: text(r.project),
                priority: r.priority,
                gpus: r.gpus,
                started_at: r.started_at,
                preemptible: r.preemptible,
            })
            .collect();
        s.gpus = c
            .gpus
            .into_iter()
            .map(|g| Gpu {
                index: g.index,
                uuid: text(g.uuid),
                name: text(g.name),
                mem_total: g.mem_total,
                mem_used: g.mem_used,
                mem_reserved: g.mem_reserved,
                util: g.util,
                temperature: g.temperature,
                power: g.power,
                healthy: g.healthy,
                closed_by: g.closed_by.iter().map(|&i| text(i)).collect(),
            })
            .collect();
        self.generation = c.generation;
        Ok(())
    }

    /// Keeps `strings`' text and indexes each of its strings. A string whose
    /// end is before its start, past the text or inside a character reads
    /// as "" (the host never sends one).
    fn add_strings(&mut self, strings: abi::Strings) {
        if strings.ends.is_empty() {
            return;
        }
        let chunk: String = strings.chars;
        // SAFETY: the bytes of a `String` never move or change while it
        // lives unmutated (moving the `String` moves only its pointer); it
        // lives in `self.chunks`, never mutated, until `clear`, which
        // empties every record and `texts` (the only holders of these
        // references) first. Nothing outside `Kept` sees them as
        // `'static`: the snapshot is lent out only for as long as `&self`
        // is borrowed.
        let whole: &'static str = unsafe { &*(chunk.as_str() as *const str) };
        let mut start = 0usize;
        self.texts.reserve(strings.ends.len());
        for &end in &strings.ends {
            let end = end as usize;
            self.texts.push(whole.get(start..end).unwrap_or(""));
            start = end.max(start);
        }
        self.chunks.push(chunk);
    }
}

/// Applies an edit to `list`: drops the items at `removed` (ascending
/// positions in `list`), then places the items of `added` at `added_at`
/// (ascending positions in the result). Refused, with `list` unchanged,
/// when the positions do not fit (checked before anything moves).
fn edit_list<T>(
    list: &mut Vec<T>,
    removed: &[u32],
    added_at: &[u32],
    added: impl ExactSizeIterator<Item = T>,
) -> Result<(), NotHeld> {
    let increasing = |l: &[u32]| l.windows(2).all(|w| w[0] < w[1]);
    if !increasing(removed) || !increasing(added_at) || added.len() != added_at.len() {
        return Err(NotHeld);
    }
    if removed.last().is_some_and(|&r| r as usize >= list.len()) {
        return Err(NotHeld);
    }
    let len = list.len() - removed.len() + added_at.len();
    if added_at.last().is_some_and(|&a| a as usize >= len) {
        return Err(NotHeld);
    }
    if removed.is_empty() && added_at.first().is_none_or(|&a| a as usize >= list.len()) {
        // Only new items at the end (or nothing at all): the usual pass.
        list.extend(added);
        return Ok(());
    }
    // The oldest records leaving the usage's window: one move of the rest.
    let lead = (removed.iter().enumerate())
        .take_while(|&(i, &r)| r as usize == i)
        .count();
    let removed = &removed[lead..];
    // Items before the first position touched stay where they are; only
    // the tail from there is rebuilt (a queue's pass touches its end, and
    // the running part of the usage is its end).
    let first = match (removed.first(), added_at.first()) {
        (Some(&r), Some(&a)) => (r as usize - lead).min(a as usize),
        (Some(&r), None) => r as usize - lead,
        (None, Some(&a)) => a as usize,
        (None, None) => {
            list.drain(..lead);
            return Ok(());
        }
    };
    if lead + first > list.len() {
        return Err(NotHeld);
    }
    list.drain(..lead);
    let mut old = list.drain(first..).collect::<Vec<T>>().into_iter();
    let mut removed = removed
        .iter()
        .map(|&r| r as usize - lead - first)
        .peekable();
    let mut at = added_at.iter().zip(added).peekable();
    list.reserve(len - first);
    let mut i = 0usize;
    for k in first..len {
        if at.peek().is_some_and(|(a, _)| **a as usize == k) {
            if let Some((_, item)) = at.next() {
                list.push(item);
            }
            continue;
        }
        loop {
            let item = old.next().ok_or(NotHeld)?;
            let gone = removed.peek().is_some_and(|&r| r == i);
            i += 1;
            if gone {
                removed.next();
            } else {
                list.push(item);
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "kept_tests.rs"]
mod tests;
