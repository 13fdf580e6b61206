//! The running tasks and GPUs of a change, in the form of the plugin's
//! contract: whole every pass for an incremental policy (0.2.2), or by
//! difference for a delta policy (0.2.3), and the rest of the change moved
//! into the delta form.

use super::diff::{self, Edit};
use super::feed::{Table, priority, rank};
use super::types as w;
use crate::plugins::delta::types as d;
use crate::plugins::policy as p;

/// The form of the changes a plugin is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// 0.2.2's `incremental-policy`.
    Incremental,
    /// 0.2.3's `delta-policy`.
    Delta,
}

/// A change as the plugin's contract writes it.
pub enum Wire {
    /// For an `incremental-policy`.
    Incremental(w::Snapshot),
    /// For a `delta-policy`.
    Delta(d::Snapshot),
}

/// A delta policy's running tasks and GPUs (`None`: as held).
pub(super) struct Parts {
    pub running: Option<d::RunningChange>,
    pub gpus: Option<d::GpuChange>,
}

/// The running tasks whole, as 0.2.2 sends them.
pub(super) fn whole_running(s: &p::Snapshot, t: &mut Table) -> Vec<w::RunningTask> {
    s.running
        .iter()
        .map(|r| w::RunningTask {
            id: r.id,
            // A running task's name is its own, so it is not kept as
            // shared: the few of each pass are written again.
            name: t.push(&r.name),
            project: t.shared(&r.project),
            priority: priority(r.priority),
            gpus: r.gpus.clone(),
            started_at: r.started_at,
            preemptible: r.preemptible,
        })
        .collect()
}

/// The GPUs whole, as 0.2.2 sends them.
pub(super) fn whole_gpus(s: &p::Snapshot, t: &mut Table) -> Vec<w::Gpu> {
    s.gpus
        .iter()
        .map(|g| w::Gpu {
            index: g.index,
            uuid: t.shared(&g.uuid),
            name: t.shared(&g.name),
            mem_total: g.mem_total,
            mem_used: g.mem_used,
            mem_reserved: g.mem_reserved,
            util: g.util,
            temperature: g.temperature,
            power: g.power,
            healthy: g.healthy,
            closed_by: g.closed_by.iter().map(|c| t.shared(c)).collect(),
        })
        .collect()
}

fn edit(e: Edit) -> d::Edit {
    d::Edit {
        removed: e.removed,
        added_at: e.added_at,
    }
}

/// The running tasks' change from `old` to `new`; `None` when none changed.
/// Only a task that started (or changed) has its name added to the table.
pub(super) fn running(
    old: &[p::RunningTask],
    new: &[p::RunningTask],
    t: &mut Table,
) -> Option<d::RunningChange> {
    let e = diff::matched(old, new, |r| r.id);
    if e.is_empty() {
        return None;
    }
    let mut gpu_index = Vec::new();
    let added = (e.added_at.iter())
        .map(|&at| {
            let r = &new[at as usize];
            gpu_index.extend_from_slice(&r.gpus);
            d::RunningTask {
                id: r.id,
                name: t.push(&r.name),
                project: t.shared(&r.project),
                priority: rank(r.priority),
                started_at: r.started_at,
                preemptible: r.preemptible,
                gpu_count: u32::try_from(r.gpus.len()).unwrap_or(u32::MAX),
            }
        })
        .collect();
    Some(d::RunningChange {
        edit: edit(e),
        added,
        gpu_index,
    })
}

/// The GPUs' change from `old` to `new`; `None` when none changed.
pub(super) fn gpus(old: &[p::Gpu], new: &[p::Gpu], t: &mut Table) -> Option<d::GpuChange> {
    let e = diff::matched(old, new, |g| g.index);
    if e.is_empty() {
        return None;
    }
    let mut closed_by = Vec::new();
    let added = (e.added_at.iter())
        .map(|&at| {
            let g = &new[at as usize];
            closed_by.extend(g.closed_by.iter().map(|c| t.shared(c)));
            d::Gpu {
                index: g.index,
                uuid: t.shared(&g.uuid),
                name: t.shared(&g.name),
                mem_total: g.mem_total,
                mem_used: g.mem_used,
                mem_reserved: g.mem_reserved,
                util: g.util,
                temperature: g.temperature,
                power: g.power,
                healthy: g.healthy,
                closed_count: u32::try_from(g.closed_by.len()).unwrap_or(u32::MAX),
            }
        })
        .collect();
    Some(d::GpuChange {
        edit: edit(e),
        added,
        closed_by,
    })
}

/// `whole`'s queue, usage and strings (already by difference) with `parts`,
/// in the delta form: a part with an empty edit is `None`.
pub(super) fn delta(whole: w::Snapshot, parts: Parts) -> d::Snapshot {
    let q = whole.queue;
    let queue = (!(q.edit.removed.is_empty() && q.edit.added_at.is_empty())).then(|| {
        let a = q.added;
        d::QueueChange {
            added: (!q.edit.added_at.is_empty()).then_some(d::Queue {
                id: a.id,
                name: a.name,
                project: a.project,
                priority: a.priority,
                gpus: a.gpus,
                gpu_mem: a.gpu_mem,
                submitted_at: a.submitted_at,
                eligible_at: a.eligible_at,
                attempts: a.attempts,
                estimated_runtime: a.estimated_runtime,
            }),
            edit: d::Edit {
                removed: q.edit.removed,
                added_at: q.edit.added_at,
            },
        }
    });
    let u = whole.usage;
    let usage = (!(u.edit.removed.is_empty() && u.edit.added_at.is_empty())).then(|| {
        let a = u.added;
        d::UsageChange {
            added: (!u.edit.added_at.is_empty()).then_some(d::Usage {
                project: a.project,
                gpus: a.gpus,
                started_at: a.started_at,
                ended_at: a.ended_at,
            }),
            edit: d::Edit {
                removed: u.edit.removed,
                added_at: u.edit.added_at,
            },
        }
    });
    d::Snapshot {
        generation: whole.generation,
        base: whole.base,
        now: whole.now,
        time_zone: whole.time_zone,
        utc_offset: whole.utc_offset,
        strings: d::Strings {
            chars: whole.strings.chars,
            ends: whole.strings.ends,
        },
        queue,
        running: parts.running,
        gpus: parts.gpus,
        usage,
    }
}

#[cfg(test)]
#[path = "parts_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "parts_model_tests.rs"]
mod model_tests;
