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

/// Takes the next `count` entries of `flat` from `*at` on, or refuses when
/// there are not that many.
fn take<'f, T>(flat: &'f [T], at: &mut usize, count: u32) -> Result<&'f [T], NotHeld> {
    let end = at.checked_add(count as usize).ok_or(NotHeld)?;
    let part = flat.get(*at..end).ok_or(NotHeld)?;
    *at = end;
    Ok(part)
}

/// The running tasks of `r` (its added tasks, their GPUs from
/// `gpu-index`).
pub(crate) fn running<'a>(
    r: &abi::RunningChange,
    text: impl Fn(u32) -> &'a str,
) -> Result<Vec<RunningTask<'a>>, NotHeld> {
    let mut at = 0;
    let mut out = Vec::with_capacity(r.added.len());
    for t in &r.added {
        out.push(RunningTask {
            id: t.id,
            name: text(t.name),
            project: text(t.project),
            priority: priority(t.priority),
            gpus: take(&r.gpu_index, &mut at, t.gpu_count)?.to_vec(),
            started_at: t.started_at,
            preemptible: t.preemptible,
        });
    }
    // Every index is some task's.
    (at == r.gpu_index.len()).then_some(out).ok_or(NotHeld)
}

/// The GPUs of `g` (its added GPUs, their closers from `closed-by`).
pub(crate) fn gpus<'a>(
    g: &abi::GpuChange,
    text: impl Fn(u32) -> &'a str,
) -> Result<Vec<Gpu<'a>>, NotHeld> {
    let mut at = 0;
    let mut out = Vec::with_capacity(g.added.len());
    for gpu in &g.added {
        let closed = take(&g.closed_by, &mut at, gpu.closed_count)?;
        out.push(Gpu {
            index: gpu.index,
            uuid: text(gpu.uuid),
            name: text(gpu.name),
            mem_total: gpu.mem_total,
            mem_used: gpu.mem_used,
            mem_reserved: gpu.mem_reserved,
            util: gpu.util,
            temperature: gpu.temperature,
            power: gpu.power,
            healthy: gpu.healthy,
            closed_by: closed.iter().map(|&c| text(c)).collect(),
        });
    }
    (at == g.closed_by.len()).then_some(out).ok_or(NotHeld)
}
