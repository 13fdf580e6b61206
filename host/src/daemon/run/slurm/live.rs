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
/// `runs` (the daemon's runs on that node), with the GPU's memory; none
/// where the last rounds of several name it: a samples file is its run's
/// owner's to write, and one naming another job's GPU, dated ahead, would
/// show that GPU as its owner chose.
pub(super) fn reading(lives: &Lives, runs: &[i64], index: u32) -> Option<(GpuReading, u64)> {
    let lives = lock(lives);
    let mut claims = (runs.iter())
        .filter_map(|r| lives.get(r)?.last.as_ref())
        .filter_map(|last| last.gpus.iter().find(|(g, _)| g.index == index));
    let (info, reading) = claims.next()?;
    match claims.next() {
        Some(_) => None,
        None => Some((reading.clone()?, info.mem_total)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::GpuInfo;
    use crate::gpu::node_live::LastRound;

    fn round(run: i64, at: i64, index: u32, util: u32) -> Live {
        let cfg = MonitorConfig {
            foreign_util_max: 15,
            foreign_quiet_ms: 5_000,
            host_mem_min_free: 0,
            stall_after_ms: 10_000,
            series_every_ms: 1_000,
        };
        let mut live = Live::new(run, cfg);
        let gpu = GpuInfo {
            index,
            uuid: format!("GPU-{index}"),
            name: "NVIDIA H200".into(),
            mem_total: 141 << 30,
        };
        let reading = GpuReading {
            util,
            util_mem: 0,
            mem_used: 1 << 30,
            temp_c: 40,
            power_mw: 300_000,
            energy_mj: None,
            processes: vec![],
        };
        live.last = Some(LastRound {
            at,
            gpus: vec![(gpu, Some(reading))],
        });
        live
    }

    #[test]
    fn a_gpu_two_runs_samples_claim_shows_neither_reading() {
        // Run 2's owner wrote a samples file naming GPU 1, which SLURM gave
        // run 1 (another user's), with a round dated far ahead.
        let lives = Lives::default();
        lock(&lives).insert(1, round(1, 1_000, 1, 90));
        lock(&lives).insert(2, round(2, i64::MAX, 1, 0));
        assert_eq!(reading(&lives, &[1], 1).map(|(r, _)| r.util), Some(90));
        assert_eq!(reading(&lives, &[1, 2], 1), None);
    }
}
