//! One pass: what is free, which reservations hold, and which tasks would
//! leave them less than they keep. Tasks are counted together in the
//! host's order: each one allowed is placed in a copy of the GPUs (first
//! fit by index, as the host places) before the next is judged.

use std::collections::BTreeMap;

use nightjar_sdk::*;

use super::{Config, Reservation, gib};

/// One GPU as this pass counts it.
#[derive(Debug, Clone)]
struct Slot {
    /// Free whole: healthy, open, nothing of nightjar's on it.
    whole: bool,
    /// Memory free for a task that shares it, bytes.
    mem: u64,
}

/// A reservation in force this pass.
struct Active<'c> {
    name: &'c str,
    r: &'c Reservation,
    until: Option<i64>,
    /// Whole GPUs still to keep (its own running tasks use the rest).
    keep: u32,
    /// Memory to keep free on one GPU, bytes.
    keep_mem: u64,
}

impl Active<'_> {
    /// Whether `slots` leave this reservation what it keeps.
    fn kept(&self, slots: &[Slot]) -> bool {
        if self.r.gpus.is_some() {
            slots.iter().filter(|g| g.whole).count() as u64 >= u64::from(self.keep)
        } else {
            slots.iter().map(|g| g.mem).max().unwrap_or(0) >= self.keep_mem
        }
    }

    /// The reason a task waits for it, with what is free.
    fn reason(&self, slots: &[Slot], machine: usize, largest: u64) -> String {
        let head = format!("reserve `{}`: {}", self.name, self.r.describe());
        match self.r.gpus {
            Some(n) if n as usize > machine => format!(
                "{head}; key `{}.gpus` is {n}, more than the {machine} GPU(s) here, so every GPU is kept: fix [plugin.reserve.config.{}]",
                self.name, self.name
            ),
            Some(_) => format!("{head}; {} free", slots.iter().filter(|g| g.whole).count()),
            None if self.keep_mem > largest => format!(
                "{head}; key `{}.gpu_mem` is more than the largest GPU here ({}), so every GPU is kept: fix [plugin.reserve.config.{}]",
                self.name,
                gib(largest),
                self.name
            ),
            None => format!(
                "{head}; at most {} free on one GPU",
                gib(slots.iter().map(|g| g.mem).max().unwrap_or(0))
            ),
        }
    }
}

/// Places a task of `gpus` GPUs (`mem` each, `None`: whole) in `slots`,
/// first fit by index; `false` (and `slots` unchanged) when it does not fit.
fn place(slots: &mut [Slot], gpus: u32, mem: Option<u64>) -> bool {
    let fits = |g: &Slot| match mem {
        None => g.whole,
        Some(m) => g.mem >= m,
    };
    let chosen: Vec<usize> = (0..slots.len())
        .filter(|&i| fits(&slots[i]))
        .take(gpus as usize)
        .collect();
    if chosen.len() < gpus as usize {
        return false;
    }
    for i in chosen {
        let g = &mut slots[i];
        g.whole = false;
        g.mem = match mem {
            None => 0,
            Some(m) => g.mem - m,
        };
    }
    true
}

/// The GPUs as this pass counts them.
fn slots(s: &Snapshot<'_>) -> Vec<Slot> {
    s.gpus
        .iter()
        .map(|g| {
            let held = s.running.iter().any(|t| t.gpus.contains(&g.index));
            let open = g.healthy && g.closed_by.is_empty();
            // A run holding the GPU whole reserves no memory on it.
            let whole_held = held && g.mem_reserved == 0;
            Slot {
                whole: open && !held,
                mem: if open && !whole_held {
                    g.mem_total.saturating_sub(g.mem_reserved.max(g.mem_used))
                } else {
                    0
                },
            }
        })
        .collect()
}

/// The pass.
pub fn evaluate(cfg: &Config, s: &Snapshot<'_>) -> Evaluation {
    let mut e = Evaluation::default();
    let mut slots = slots(s);
    let largest = s.gpus.iter().map(|g| g.mem_total).max().unwrap_or(0);
    let mut active: Vec<Active> = Vec::new();
    for (name, r) in cfg {
        let Some(until) = r.holds(s) else { continue };
        let own_waits = s
            .queue
            .iter()
            .any(|t| t.gpus > 0 && r.is_for(t.priority, t.project));
        if r.lend && !own_waits {
            continue;
        }
        let mut own: Vec<u32> = s
            .running
            .iter()
            .filter(|t| r.is_for(t.priority, t.project))
            .flat_map(|t| t.gpus.iter().copied())
            .collect();
        own.sort_unstable();
        own.dedup();
        let keep = r.gpus.unwrap_or(0).saturating_sub(own.len() as u32);
        let keep_mem = r.gpu_mem.map(|m| m.bytes()).unwrap_or(0);
        active.push(Active {
            name,
            r,
            until,
            keep,
            keep_mem,
        });
    }
    if active.is_empty() {
        return e;
    }
    // One reason per text: ten thousand tasks waiting for one reservation share it.
    let mut reasons: BTreeMap<String, Reason> = BTreeMap::new();
    for t in s.queue.iter().filter(|t| t.gpus > 0) {
        let mut after = slots.clone();
        if !place(&mut after, t.gpus, t.gpu_mem) {
            // It does not fit now whatever this policy says: the host keeps it waiting.
            continue;
        }
        let short = active
            .iter()
            .find(|a| !a.r.is_for(t.priority, t.project) && !a.kept(&after));
        if let Some(a) = short {
            let text = a.reason(&slots, s.gpus.len(), largest);
            let reason = reasons
                .entry(text)
                .or_insert_with_key(|k| Reason::from(k.clone()))
                .clone();
            e.defer(t.id, reason, a.until);
            continue;
        }
        slots = after;
        for a in active
            .iter_mut()
            .filter(|a| a.r.is_for(t.priority, t.project))
        {
            a.keep = a.keep.saturating_sub(t.gpus);
            if t.gpu_mem.is_some() {
                a.keep_mem = a.keep_mem.saturating_sub(t.gpu_mem.unwrap_or(0));
            }
        }
    }
    e
}
