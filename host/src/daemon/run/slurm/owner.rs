//! Runs whose SLURM job is their task's owner's (`[executor] job_user =
//! "owner"`, the default, with the daemon run as root): `sbatch --uid
//! --gid` of the owner, so SLURM's per-user limits, fair share and
//! accounting tell the lab's users apart.
//!
//! The job's batch step then runs as the owner, so its supervisor cannot
//! be root's: the run folder (spec, then the supervisor's logs, markers
//! and status) is handed to the owner once the daemon has written what
//! the job reads, and the owner controls what is in it from then on. The
//! rules that keep a root daemon safe with it:
//! - the folder itself stays where the daemon made it (the runs folder is
//!   root's and writable by root alone), so only its entries are the
//!   owner's;
//! - the daemon reads an entry only as a plain file of one name, never
//!   through a link, never a FIFO (`nightjar_core::plain_file`), and
//!   writes one only anew (`files::create_new`);
//! - nothing the owner could write decides which job or array element is
//!   a run's: an element is found from the batch's index (root's,
//!   `index.rs`), and a job counts as a run's only when SLURM says its user
//!   is the daemon's or the run folder's owner.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result};

use super::folder::{INDEX, SPEC};
use crate::config::{ExecutorConfig, JobUser};
use crate::daemon::run::executor::Launch;

/// The owner (uid, gid) `run`'s job is submitted as, when it is not the
/// daemon's user: a root daemon's task of another user under
/// `job_user = "owner"`.
pub(crate) fn of(cfg: &ExecutorConfig, run: &Launch) -> Option<(u32, u32)> {
    if cfg.job_user != JobUser::Owner {
        return None;
    }
    let r = run.spec.run_as.as_ref()?;
    (r.uid != crate::users::euid()).then_some((r.uid, r.gid))
}

/// Makes the prepared `run` the owner's job: its supervisor runs as the
/// owner already and drops to no one.
pub(crate) fn take_over(run: &mut Launch) {
    run.spec.run_as = None;
}

/// Hands the run folder `dir` (prepared, its spec written) to `owner`:
/// first the files the job reads in it (the spec, the node sampler's
/// spec), then the folder itself, private to the owner.
pub(crate) fn hand_over(dir: &Path, owner: (u32, u32)) -> Result<()> {
    let (uid, gid) = owner;
    for name in [SPEC, crate::gpu::node::SPEC] {
        let path = dir.join(name);
        match std::os::unix::fs::lchown(&path, Some(uid), Some(gid)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("hand {} to uid {uid}", path.display()));
            }
            _ => {}
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .and_then(|()| std::os::unix::fs::lchown(dir, Some(uid), Some(gid)))
        .with_context(|| {
            format!(
                "hand the run folder {} to uid {uid} (executor.job_user = \"owner\"); on a shared folder where root cannot (NFS with root_squash), set job_user = \"daemon\"",
                dir.display()
            )
        })
}

/// Hands a job array's folder `dir` to `owner`: the folder enterable and
/// its index readable (the owner's batch step reads it; both stay the
/// daemon's), and its `out` folder,
/// where SLURM writes each element's output as the job's user, theirs.
/// The `out` folder's path.
pub(crate) fn array_output(dir: &Path, owner: Option<(u32, u32)>) -> Result<std::path::PathBuf> {
    let Some((uid, gid)) = owner else {
        return Ok(dir.to_path_buf());
    };
    let out = dir.join(OUT);
    // The specs: each element's supervisor reads its line and locks its byte.
    std::os::unix::fs::lchown(dir.join(super::folder::SPECS), Some(uid), Some(gid))
        .with_context(|| format!("hand {} to uid {uid}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711))
        .and_then(|()| {
            std::fs::set_permissions(dir.join(INDEX), std::fs::Permissions::from_mode(0o644))
        })
        .and_then(|()| std::fs::create_dir(&out))
        .and_then(|()| std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o700)))
        .and_then(|()| std::os::unix::fs::lchown(&out, Some(uid), Some(gid)))
        .with_context(|| format!("hand {} to uid {uid}", out.display()))?;
    Ok(out)
}

/// In a job array's folder handed to its owner: the folder SLURM writes
/// each element's output into.
pub(crate) const OUT: &str = "out";

/// The user whose SLURM jobs may be the run in `dir`'s: the folder's owner
/// (only root can have handed it to another user), the daemon's user when
/// it cannot tell.
pub(crate) fn owner_of(dir: &Path) -> u32 {
    std::fs::symlink_metadata(dir).map_or_else(|_| crate::users::euid(), |m| m.uid())
}

/// Whether a job SLURM lists as user `uid`'s may be the job of a run
/// whose folder's owner is `owner`: the daemon's own, or that owner's
/// (another user can copy any comment).
pub(crate) fn may_own(uid: u32, owner: u32) -> bool {
    uid == crate::users::euid() || uid == owner
}

/// Makes the daemon's runs and batches `folders` enterable by any user
/// (not writable by them), where a root daemon's jobs are their
/// owners' (`job_user = "owner"`): each job's batch step, run as its
/// owner, opens its run folder through them. Each run folder stays
/// private to its owner.
pub(crate) fn open_runs_folders(
    cfg: &ExecutorConfig,
    folders: &[std::path::PathBuf],
) -> Result<()> {
    if !cfg.jobs_are_owners() {
        return Ok(());
    }
    for f in folders {
        let mode = std::fs::metadata(f).map(|m| m.mode()).unwrap_or(0);
        std::fs::set_permissions(f, std::fs::Permissions::from_mode((mode & 0o7777) | 0o011))
            .with_context(|| {
                format!(
                    "key `executor.shared_dir`: cannot let other users enter {} (executor.job_user = \"owner\")",
                    f.display()
                )
            })?;
    }
    Ok(())
}

/// Checks, before a job is handed to its owner, that any user can enter
/// the shared folder `shared` and its runs and batches folders: the job's
/// batch step, run as its owner, opens its run folder through them.
pub(crate) fn check_enterable(shared: &Path) -> Result<()> {
    for f in [
        shared.to_path_buf(),
        shared.join(super::RUNS),
        shared.join(super::BATCHES),
    ] {
        let mode = std::fs::metadata(&f)
            .with_context(|| format!("key `executor.shared_dir`: cannot read {}", f.display()))?
            .mode();
        if mode & 0o001 == 0 {
            anyhow::bail!(
                "key `executor.shared_dir`: {} (mode {:o}) cannot be entered by other users, and with `executor.job_user = \"owner\"` each job runs as its task's owner, who opens their run folder through it; `chmod o+x` it (its run folders stay private to their owners), or set job_user = \"daemon\"",
                f.display(),
                mode & 0o7777
            );
        }
    }
    Ok(())
}
