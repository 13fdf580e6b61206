//! A change's added items, read from the columns the host sends into the
//! records a policy sees: each function checks that every column is as long
//! as the first (and a flattened list as long as its counts say) and yields
//! the records, or refuses the change.

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

/// The running tasks of `r`.
pub(crate) fn running<'a>(
    r: &abi::Running,
    text: impl Fn(u32) -> &'a str,
) -> Result<Vec<RunningTask<'a>>, NotHeld> {
    let n = r.id.len();
    all(
        n,
        &[
            r.name.len(),
            r.project.len(),
            r.priority.len(),
            r.started_at.len(),
            r.preemptible.len(),
            r.gpu_count.len(),
        ],
    )?;
    let gpus = split(&r.gpu_index, &r.gpu_count)?;
    Ok((0..n)
        .map(|i| RunningTask {
            id: r.id[i],
            name: text(r.name[i]),
            project: text(r.project[i]),
            priority: priority(r.priority[i]),
            gpus: gpus[i].to_vec(),
            started_at: r.started_at[i],
            preemptible: r.preemptible[i],
        })
        .collect())
}

/// The GPUs of `g`.
pub(crate) fn gpus<'a>(
    g: &abi::Gpus,
    text: impl Fn(u32) -> &'a str,
) -> Result<Vec<Gpu<'a>>, NotHeld> {
    let n = g.index.len();
    all(
        n,
        &[
            g.uuid.len(),
            g.name.len(),
            g.mem_total.len(),
            g.mem_used.len(),
            g.mem_reserved.len(),
            g.util.len(),
            g.temperature.len(),
            g.power.len(),
            g.healthy.len(),
            g.closed_count.len(),
        ],
    )?;
    let closed = split(&g.closed_by, &g.closed_count)?;
    Ok((0..n)
        .map(|i| Gpu {
            index: g.index[i],
            uuid: text(g.uuid[i]),
            name: text(g.name[i]),
            mem_total: g.mem_total[i],
            mem_used: g.mem_used[i],
            mem_reserved: g.mem_reserved[i],
            util: g.util[i],
            temperature: g.temperature[i],
            power: g.power[i],
            healthy: g.healthy[i],
            closed_by: closed[i].iter().map(|&c| text(c)).collect(),
        })
        .collect())
}
