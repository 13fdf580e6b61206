//! The snapshot a plugin keeps between passes: the host sends each pass as a
//! change (strings added to the table; the queue's, the running tasks', the
//! GPUs' and the usage's edits, each left out when unchanged), and the SDK
//! applies it to the records it kept, so a pass where little changed costs
//! little. Policies see the same [`Snapshot`] as ever.

use crate::abi;
use crate::columns;
use crate::snapshot::Snapshot;
use crate::usage_edit::Pass;

/// What a plugin holds between passes.
pub(crate) struct Kept {
    /// The generation held; 0: nothing.
    generation: u64,
    /// The records. Their text borrows from `chunks`: `'static` is a lie
    /// told only inside this type, which hands the snapshot out borrowed
    /// from itself (see [`Kept::snapshot`]) and clears it before the
    /// chunks it borrows from are dropped.
    snapshot: Snapshot<'static>,
    /// How the last change reached its usage list (for [`usage_edit`]).
    ///
    /// [`usage_edit`]: crate::usage_edit::usage_edit
    pass: Option<Pass>,
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
            pass: None,
            texts: Vec::new(),
            chunks: Vec::new(),
        }
    }

    /// How the last change applied reached its usage list, once.
    pub(crate) fn take_pass(&mut self) -> Option<Pass> {
        self.pass.take()
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
        self.pass = None;
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
        // Every part is read before any is applied: a change that does not
        // fit is refused whole (and then nothing is held).
        let queue = (c.queue)
            .map(|q| {
                let added =
                    (q.added.as_ref()).map_or(Ok(Vec::new()), |a| columns::queue(a, text))?;
                Ok::<_, NotHeld>((q.edit, added))
            })
            .transpose()?;
        let running = (c.running)
            .map(|r| Ok::<_, NotHeld>((columns::running(&r, text)?, r.edit)))
            .transpose()?;
        let gpus = (c.gpus)
            .map(|g| Ok::<_, NotHeld>((columns::gpus(&g, text)?, g.edit)))
            .transpose()?;
        let usage = (c.usage)
            .map(|u| {
                let added =
                    (u.added.as_ref()).map_or(Ok(Vec::new()), |a| columns::usage(a, text))?;
                Ok::<_, NotHeld>((u.edit, added))
            })
            .transpose()?;
        let time_zone = text(c.time_zone);
        let s = &mut self.snapshot;
        if let Some((e, added)) = queue {
            edit_list(&mut s.queue, &e.removed, &e.added_at, added.into_iter())?;
        }
        if let Some((added, e)) = running {
            edit_list(&mut s.running, &e.removed, &e.added_at, added.into_iter())?;
        }
        if let Some((added, e)) = gpus {
            edit_list(&mut s.gpus, &e.removed, &e.added_at, added.into_iter())?;
        }
        let (removed, added_at) = match usage {
            Some((e, added)) => {
                edit_list(&mut s.usage, &e.removed, &e.added_at, added.into_iter())?;
                (e.removed, e.added_at)
            }
            None => (Vec::new(), Vec::new()),
        };
        // From nothing (base 0): every run is new, whatever the edit said.
        let (removed, added_at) = match c.base {
            0 => (Vec::new(), (0..s.usage.len() as u32).collect()),
            _ => (removed, added_at),
        };
        self.pass = Some(Pass {
            to: c.generation,
            from: c.base,
            removed,
            added_at,
        });
        s.now = c.now;
        s.time_zone = time_zone;
        s.utc_offset = c.utc_offset;
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
    // Everything is checked: from here nothing fails. Each phase moves the
    // items after its first position once, in runs (a queue of 10,000 with
    // 1% new was rebuilt item by item: the internals' benchmarks,
    // 2026-12-05, night).
    let added: Vec<T> = added.collect();
    remove_sorted(list, removed);
    insert_sorted(list, added_at, added);
    debug_assert_eq!(list.len(), len);
    Ok(())
}

/// Drops the items of `list` at `removed` (ascending, distinct, each in
/// range: the caller checked), moving each run of kept items once.
fn remove_sorted<T>(list: &mut Vec<T>, removed: &[u32]) {
    let Some(&first) = removed.first() else {
        return;
    };
    let len = list.len();
    let first = first as usize;
    assert!(removed.last().is_some_and(|&r| (r as usize) < len));
    let p = list.as_mut_ptr();
    // Until the moves are done the list holds only what never moves: a
    // panic in a drop leaks the rest rather than dropping anything twice.
    // SAFETY: `first < len`, so the list keeps only initialised items.
    unsafe { list.set_len(first) };
    let mut write = first;
    for (k, &r) in removed.iter().enumerate() {
        let r = r as usize;
        let next = removed.get(k + 1).map_or(len, |&n| n as usize);
        // SAFETY: `r < next <= len` (ascending and in range), so item `r`
        // is initialised and dropped once; the run `r + 1 .. next` is
        // initialised and lands at `write <= r`, before any item not yet
        // moved (`ptr::copy` allows the overlap).
        unsafe {
            std::ptr::drop_in_place(p.add(r));
            let run = next - r - 1;
            std::ptr::copy(p.add(r + 1), p.add(write), run);
            write += run;
        }
    }
    // SAFETY: `0 .. write` now holds the kept items, each once.
    unsafe { list.set_len(write) };
}

/// Places `added` at `added_at` (ascending, distinct, each below the
/// result's length: the caller checked), moving each run of the items
/// after the first position once, from the back.
fn insert_sorted<T>(list: &mut Vec<T>, added_at: &[u32], added: Vec<T>) {
    let old = list.len();
    let len = old + added.len();
    assert!(added.len() == added_at.len() && added_at.last().is_none_or(|&a| (a as usize) < len));
    assert!(added_at.windows(2).all(|w| w[0] < w[1]));
    list.reserve(added.len());
    let p = list.as_mut_ptr();
    let first = added_at.first().map_or(old, |&a| (a as usize).min(old));
    // Only what never moves is counted until the end (see `remove_sorted`).
    // SAFETY: `first <= old`.
    unsafe { list.set_len(first) };
    let (mut src, mut dst) = (old, len);
    for (&at, item) in added_at.iter().zip(added).rev() {
        let at = at as usize;
        // The old items that come after `at` in the result: the
        // positions are ascending and below `len`, so `at < dst` and
        // there are at least as many old items left as places before
        // `dst` that no added item takes.
        let run = dst - at - 1;
        // SAFETY: `run <= src` (above); `src - run .. src` are old items
        // not yet moved, copied to `at + 1 .. dst`, inside the reserved
        // `len`; then slot `at` (moved from, or past the old end) is
        // written once.
        unsafe {
            std::ptr::copy(p.add(src - run), p.add(at + 1), run);
            std::ptr::write(p.add(at), item);
        }
        src -= run;
        dst = at;
    }
    debug_assert_eq!(src, dst);
    // SAFETY: every slot below `len` holds one item: the old ones before
    // the first position untouched, the rest moved or written above.
    unsafe { list.set_len(len) };
}

#[cfg(test)]
#[path = "kept_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "kept_edit_tests.rs"]
mod edit_tests;
