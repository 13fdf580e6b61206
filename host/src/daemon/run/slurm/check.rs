//! The daemon's start under `[executor] kind = "slurm"`: the cluster
//! answers, the shared folder is there, writable and the daemon's; the
//! cluster's cores and GPUs placement counts against; the daemon's mark
//! in its jobs' comments.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{Context, Result};

use super::{BATCHES, RUNS, SlurmExecutor, cli, cmd, folder, owner};
use crate::config::ExecutorConfig;

impl SlurmExecutor {
    /// Checks at the daemon's start that the cluster answers and the shared
    /// folder is there and writable; the cluster's cores and GPUs, which
    /// nightjar's placement counts against.
    pub fn check(cfg: &ExecutorConfig) -> Result<(u32, u32)> {
        let dir = &cfg.shared_dir;
        for sub in [RUNS, BATCHES] {
            std::fs::create_dir_all(dir.join(sub)).with_context(|| {
                format!(
                    "key `executor.shared_dir` ({}): cannot make its {sub} folder; create it on the shared file system, writable by the daemon's user",
                    dir.display()
                )
            })?;
        }
        owner::open_runs_folders(cfg, &[dir.join(RUNS), dir.join(BATCHES)])?;
        let probe = dir.join(format!(".nightjar-probe-{}", std::process::id()));
        std::fs::write(&probe, b"probe").with_context(|| {
            format!(
                "key `executor.shared_dir` ({}): not writable by the daemon's user",
                dir.display()
            )
        })?;
        // What this file system makes the daemon's files (root squashed
        // to nobody, say): the owner the runs folder must have.
        let ours = std::fs::metadata(&probe).map(|m| m.uid());
        let _ = std::fs::remove_file(&probe);
        let owner_mode = |p: &Path| std::fs::metadata(p).map(|m| (m.uid(), m.mode()));
        // A batch's index names the run folders its elements run: as much
        // the daemon's as the run folders themselves.
        for sub in [RUNS, BATCHES] {
            if let (Ok(ours), Ok(shared), Ok(runs)) =
                (&ours, owner_mode(dir), owner_mode(&dir.join(sub)))
                && let Some(why) = folder::exposed(shared, runs, *ours)
            {
                anyhow::bail!(
                    "key `executor.shared_dir` ({}): another user could put a run folder of their own in place of the daemon's, whose spec the supervisor reads as the daemon's user on the node: {}",
                    dir.display(),
                    why.replace("runs folder", &format!("{sub} folder"))
                );
            }
        }
        let out = cmd::run("sinfo", &["-h", "-N", "-o", "%N|%c|%G"]).context(
            "executor.kind = \"slurm\": `sinfo` does not answer; is slurmctld up and SLURM_CONF right? (scripts/slurm-dev starts a one-node cluster)",
        )?;
        let totals = cli::parse_totals(&out);
        if totals.0 == 0 {
            anyhow::bail!("executor.kind = \"slurm\": `sinfo` lists no node with cores: {out}");
        }
        Ok(totals)
    }
}

/// `cfg` with, under `[executor] kind = "slurm"`, the cluster's cores and
/// GPUs as the ones placement counts against (where `cpus` and `gpus` do
/// not name their own), after checking that the cluster answers and the
/// shared folder is usable. A local config comes back as it is.
pub fn sized(mut cfg: crate::config::Config) -> Result<crate::config::Config> {
    if cfg.executor.kind != crate::config::ExecutorKind::Slurm {
        return Ok(cfg);
    }
    let (cpus, gpus) = SlurmExecutor::check(&cfg.executor)?;
    tracing::info!("SLURM executor: the cluster has {cpus} cores and {gpus} GPUs");
    if cfg.cpus.is_empty() {
        cfg.cpus = (0..cpus).collect();
    }
    if cfg.gpus.is_empty() {
        cfg.gpus = (0..gpus).collect();
    }
    Ok(cfg)
}

/// `nightjar:<host>-<8 hex of the state dir's path>`: the daemon's mark.
pub(super) fn tag(state_dir: &Path) -> String {
    use sha2::Digest;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let path = std::path::absolute(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
    let digest = sha2::Sha256::digest(path.as_os_str().as_encoded_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("nightjar:{host}-{hex}")
}
