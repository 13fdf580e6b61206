//! A change's added items, read from what the host sends (columns for the
//! queue and the usage, records and a flattened list for running tasks and
//! GPUs) into the records a policy sees: each function checks that every
//! column is as long as the first and a flattened list as long as its
//! counts say, and yields the records, or refuses the change.

use crate::abi;
use crate::kept::NotHeld;
use crate::snapshot::{Gpu, QueuedTask, RunningTask, Usage, priority, said};

/// Whether every length is `n`.
fn all(n: usize, lengths: &[usize]) -> Result<(), NotHeld> {
    if lengths.iter().all(|&len| len == n) {
        Ok(())
    } else {
        Err(NotHeld)
    }
}

/// The queued tasks of `q`, their text read through `text`.
pub(crate) fn queue<'a>(
    q: &abi::Queue,
    text: impl Fn(u32) -> &'a str,
) -> Result<Vec<QueuedTask<'a>>, NotHeld> {
    let n = q.id.len();
    all(
        n,
        &[
            q.name.len(),
            q.project.len(),
            q.priority.len(),
            q.gpus.len(),
            q.gpu_mem.len(),
            q.submitted_at.len(),
            q.eligible_at.len(),
            q.attempts.len(),
            q.estimated_runtime.len(),
        ],
    )?;
    Ok((0..n)
        .map(|i| QueuedTask {
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
        })
        .collect())
}

/// The usage records of `u`.
pub(crate) fn usage<'a>(
    u: &abi::Usage,
    text: impl Fn(u32) -> &'a str,
) -> Result<Vec<Usage<'a>>, NotHeld> {
    let m = u.project.len();
    all(m, &[u.gpus.len(), u.started_at.len(), u.ended_at.len()])?;
    Ok((0..m)
        .map(|i| Usage {
            project: text(u.project[i]),
            gpus: u.gpus[i],
            started_at: u.started_at[i],
            ended_at: (u.ended_at[i] != 0).then_some(u.ended_at[i]),
        })
        .collect())
}

/// Splits `flat` into one slice per count of `counts`, or refuses when the
/// counts do not add up to its length.
fn split<'f, T>(flat: &'f [T], counts: &[u32]) -> Result<Vec<&'f [T]>, NotHeld> {
    let total = counts
        .iter()
        .try_fold(0usize, |sum, &c| sum.checked_add(c as usize));
    if total != Some(flat.len()) {
        return Err(NotHeld);
    }
    let mut at = 0;
    Ok(counts
        .iter()
        .map(|&c| {
            let part = &flat[at..at + c as usize];
            at += c as usize;
            part
        })
        .collect())
}

/// The running tasks of `r` (its added tasks, their GPUs from
/// `gpu-index`).
pub(crate) fn running<'a>(
    r: &abi::RunningChange,
    text: impl Fn(u32) -> &'a str,
) -> Result<Vec<RunningTask<'a>>, NotHeld> {
    let counts: Vec<u32> = r.added.iter().map(|t| t.gpu_count).collect();
    let gpus = split(&r.gpu_index, &counts)?;
    Ok((r.added.iter().zip(gpus))
        .map(|(t, gpus)| RunningTask {
            id: t.id,
            name: text(t.name),
            project: text(t.project),
            priority: priority(t.priority),
            gpus: gpus.to_vec(),
            started_at: t.started_at,
            preemptible: t.preemptible,
        })
        .collect())
}

/// The GPUs of `g` (its added GPUs, their closers from `closed-by`).
pub(crate) fn gpus<'a>(
    g: &abi::GpuChange,
    text: impl Fn(u32) -> &'a str,
) -> Result<Vec<Gpu<'a>>, NotHeld> {
    let counts: Vec<u32> = g.added.iter().map(|g| g.closed_count).collect();
    let closed = split(&g.closed_by, &counts)?;
    Ok((g.added.iter().zip(closed))
        .map(|(g, closed)| Gpu {
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
            closed_by: closed.iter().map(|&c| text(c)).collect(),
        })
        .collect())
}
