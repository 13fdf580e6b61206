//! An incremental policy built against the frozen 0.2.2 contract
//! (`wit/nightjar-plugin@0.2.2`, world `incremental-scheduling-policy`) with
//! wit-bindgen directly, as the SDK built policies before 0.2.3: the host
//! must keep feeding it changes (the queue and the usage by difference, the
//! running tasks and GPUs whole every pass). It keeps the snapshot the
//! plain way (the string table, the queue's ids, projects and GPUs, the
//! usage's projects), and its answer reads every part, so a change applied
//! wrong shows in the answer:
//!
//! - each task scores 10 x its GPUs + the usage records of its project +
//!   100 x the running tasks of its project + its position in the queue;
//! - a task of project `v022-held` is deferred ("held by the 0.2.2 plugin");
//! - a GPU over 80 °C is closed ("hot: N °C");
//! - a change from a base it does not hold is answered with generation 0.

wit_bindgen::generate!({
    path: "../../../wit/nightjar-plugin@0.2.2",
    world: "incremental-scheduling-policy",
});

use std::cell::RefCell;

use exports::nightjar::plugin::incremental_policy::{
    ClosedGpu, Deferrals, Edit, Evaluation, Guest, Rejections, Snapshot,
};
use nightjar::plugin::types::ConfigError;

/// What the plugin keeps between passes.
#[derive(Default)]
struct Kept {
    generation: u64,
    strings: Vec<String>,
    /// (project, GPUs) of each queued task, in the queue's order.
    queue: Vec<(u32, u32)>,
    /// The project of each usage record.
    usage: Vec<u32>,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

/// `held` with `e` applied, the added items from `added`; `None` when the
/// edit does not fit.
fn apply<T: Copy>(held: &[T], e: &Edit, added: &[T]) -> Option<Vec<T>> {
    if e.added_at.len() != added.len() {
        return None;
    }
    let mut kept = held
        .iter()
        .enumerate()
        .filter(|(i, _)| e.removed.binary_search(&(*i as u32)).is_err())
        .map(|(_, t)| *t);
    let len = held.len().checked_sub(e.removed.len())? + added.len();
    let mut next = e.added_at.iter().zip(added).peekable();
    let mut out = Vec::with_capacity(len);
    for k in 0..len {
        match next.peek() {
            Some((at, item)) if **at as usize == k => {
                out.push(**item);
                next.next();
            }
            _ => out.push(kept.next()?),
        }
    }
    Some(out)
}

impl Kept {
    fn text(&self, i: u32) -> &str {
        self.strings.get(i as usize).map_or("", String::as_str)
    }

    fn take(&mut self, c: &Snapshot) -> Option<()> {
        if c.base == 0 {
            *self = Kept::default();
        } else if c.base != self.generation {
            return None;
        }
        let mut start = 0usize;
        for &end in &c.strings.ends {
            let text = c.strings.chars.get(start..end as usize).unwrap_or("");
            self.strings.push(text.to_string());
            start = end as usize;
        }
        let q = &c.queue.added;
        let added: Vec<(u32, u32)> = q
            .project
            .iter()
            .copied()
            .zip(q.gpus.iter().copied())
            .collect();
        self.queue = apply(&self.queue, &c.queue.edit, &added)?;
        self.usage = apply(&self.usage, &c.usage.edit, &c.usage.added.project)?;
        self.generation = c.generation;
        Some(())
    }
}

struct KeptPolicy;

impl Guest for KeptPolicy {
    fn configure(_config: String) -> Result<(), ConfigError> {
        Ok(())
    }

    fn evaluate(c: Snapshot) -> Evaluation {
        KEPT.with_borrow_mut(|k| {
            let mut e = Evaluation {
                generation: 0,
                reasons: Vec::new(),
                scores: Vec::new(),
                deferred: Deferrals {
                    task: Vec::new(),
                    reason: Vec::new(),
                    until: Vec::new(),
                },
                rejected: Rejections {
                    task: Vec::new(),
                    reason: Vec::new(),
                },
                closed_gpus: Vec::new(),
                preempt: Vec::new(),
            };
            if k.take(&c).is_none() {
                *k = Kept::default();
                return e;
            }
            e.generation = c.generation;
            let running: Vec<&str> = c.running.iter().map(|r| k.text(r.project)).collect();
            for (i, &(project, gpus)) in k.queue.iter().enumerate() {
                let name = k.text(project);
                if name == "v022-held" {
                    if e.reasons.is_empty() {
                        e.reasons.push("held by the 0.2.2 plugin".into());
                    }
                    e.deferred.task.push(i as u32);
                    e.deferred.reason.push(0);
                    e.deferred.until.push(0);
                }
                let used = k.usage.iter().filter(|&&u| k.text(u) == name).count() as i32;
                let busy = running.iter().filter(|&&r| r == name).count() as i32;
                e.scores
                    .push(10 * gpus as i32 + used + 100 * busy + i as i32);
            }
            for g in &c.gpus {
                if g.temperature > 80 {
                    e.closed_gpus.push(ClosedGpu {
                        index: g.index,
                        reason: e.reasons.len() as u32,
                    });
                    e.reasons.push(format!("hot: {} °C", g.temperature));
                }
            }
            e
        })
    }
}

export!(KeptPolicy);
