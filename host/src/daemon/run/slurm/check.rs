//! The daemon's start under `[executor] kind = "slurm"`: the cluster
//! answers, the shared folder is there, writable and the daemon's; the
//! cluster's cores and GPUs placement counts against; the daemon's mark
//! in its jobs' comments.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{Context, Result};

use super::{BATCHES, RUNS, SlurmExecutor, cli, cmd, folder, owner, trust};
use crate::config::ExecutorConfig;

impl SlurmExecutor {
    /// Checks at the daemon's start that the cluster answers and the shared
    /// folder is there and writable; the cluster's cores and GPUs, which
    /// nightjar's placement counts against.
    pub fn check(cfg: &ExecutorConfig) -> Result<(u32, u32)> {
        let dir = &cfg.shared_dir;
        let me = crate::users::euid();
        let trusted = || match trust::exposed_path(dir, &|uid| uid == 0 || uid == me) {
            Some(why) => Err(anyhow::anyhow!(
                "key `executor.shared_dir` ({}): another user could change where it leads, and put run folders of their own where the daemon writes specs and reads statuses: {why}",
                dir.display()
            )),
            None => Ok(()),
        };
        // Before anything is made or changed through it.
        trusted()?;
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "key `executor.shared_dir` ({}): cannot make it; create it on the shared file system, writable by the daemon's user",
                dir.display()
            )
        })?;
        // And once all of it is there: the walk ends at a part not there
        // yet, which another user may have made meanwhile (in /tmp), and
        // what follows it (`missing/../link`) it did not see at all.
        trusted()?;
        for sub in [RUNS, BATCHES] {
            // Never through a link there (another user's, in a sticky folder).
            match std::fs::create_dir(dir.join(sub)) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(e).with_context(|| {
                        format!(
                            "key `executor.shared_dir` ({}): cannot make its {sub} folder; create it on the shared file system, writable by the daemon's user",
                            dir.display()
                        )
                    });
                }
                _ => {}
            }
        }
        let ours = probe(dir).with_context(|| {
            format!(
                "key `executor.shared_dir` ({}): not writable by the daemon's user",
                dir.display()
            )
        })?;
        let owner_mode = |m: std::fs::Metadata| (m.uid(), m.mode());
        // A batch's index names the run folders its elements run: as much
        // the daemon's as the run folders themselves.
        for sub in [RUNS, BATCHES] {
            // The shared folder where its path leads (checked above), the
            // runs folder itself: a link there is no runs folder.
            if let (Ok(shared), Ok(runs)) = (
                std::fs::metadata(dir).map(owner_mode),
                std::fs::symlink_metadata(dir.join(sub)).map(owner_mode),
            ) {
                if runs.1 & 0o170000 != 0o040000 {
                    anyhow::bail!(
                        "key `executor.shared_dir` ({}): its {sub} folder is not a folder (a symbolic link, say); the daemon makes it itself: remove it",
                        dir.display()
                    );
                }
                if let Some(why) = folder::exposed(shared, runs, ours) {
                    anyhow::bail!(
                        "key `executor.shared_dir` ({}): another user could put a run folder of their own in place of the daemon's, whose spec the supervisor reads as the daemon's user on the node: {}",
                        dir.display(),
                        why.replace("runs folder", &format!("{sub} folder"))
                    );
                }
            }
        }
        owner::open_runs_folders(cfg, &[dir.join(RUNS), dir.join(BATCHES)])?;
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

/// The owner the file system gives the daemon's files in the shared
/// folder `dir` (root squashed to nobody, say): that of a file made anew
/// there, under a name nobody could have taken first, never through a
/// link or over another user's file.
fn probe(dir: &Path) -> Result<u32> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(format!(
        ".nightjar-probe-{}-{}",
        std::process::id(),
        cli::fresh_mark()?
    ));
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("make {}", path.display()))?;
    let ours = f.metadata().map(|m| m.uid());
    let _ = std::fs::remove_file(&path);
    Ok(ours?)
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

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
