//! Each running job's node samples read at every poll
//! (`gpu/node_live.rs`): SLURM runs get stall marks as local runs do, and
//! `nightjar gpus` shows the nodes' GPUs as their jobs' samplers last read
//! them. Jobs with no sampler (CPU jobs, `node_gpus = "none"`) have no
//! samples file: nothing is read for them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::daemon::state::lock;
use crate::gpu::GpuReading;
use crate::gpu::monitor::MonitorConfig;
use crate::gpu::node_live::Live;

/// The running runs' readers, by run id. Never locked with the jobs held,
/// nor the jobs with it held.
pub(super) type Lives = Mutex<HashMap<i64, Live>>;

/// Reads what the samplers of `running` (run, folder) appended since the
/// last poll, forgetting the runs no longer running; the runs that became
/// stalled (true) or active again (false). Blocking (reads files).
pub(super) fn read(
    lives: &Lives,
    running: &[(i64, PathBuf)],
    cfg: &MonitorConfig,
) -> Vec<(i64, bool)> {
    let mut lives = lock(lives);
    lives.retain(|run, _| running.iter().any(|(r, _)| r == run));
    let mut changes = Vec::new();
    for (run, dir) in running {
        let live = lives
            .entry(*run)
            .or_insert_with(|| Live::new(*run, cfg.clone()));
        if let Some(stalled) = live.read(dir, crate::daemon::watch::gpus::log_bytes(dir)) {
            changes.push((*run, stalled));
        }
    }
    changes
}

/// The last reading of GPU `index` of a node by the sampler of one of
/// `runs` (the daemon's runs on that node), with the GPU's memory; the
/// newest where several read it.
pub(super) fn reading(lives: &Lives, runs: &[i64], index: u32) -> Option<(GpuReading, u64)> {
    let lives = lock(lives);
    (runs.iter())
        .filter_map(|r| lives.get(r)?.last.as_ref())
        .filter_map(|last| {
            let (info, reading) = last.gpus.iter().find(|(g, _)| g.index == index)?;
            Some((last.at, reading.clone()?, info.mem_total))
        })
        .max_by_key(|(at, _, _)| *at)
        .map(|(_, r, mem)| (r, mem))
}
