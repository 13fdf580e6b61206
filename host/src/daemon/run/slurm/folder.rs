//! A SLURM run's folder (in the shared folder every node sees): the spec
//! its batch step reads (also its supervisor's lock file), the batch
//! script of a job of its own, and the status the supervisor leaves (or
//! the daemon's tombstone of a run given back); and a job array's folder.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::daemon::run::executor::Launch;
use crate::gpu::node;
use crate::sandbox::files;

/// The spec file the batch step reads on its stdin; the supervisor's lock
/// file too (the state dir, where a local run's lock is, is not shared;
/// one file less for each run on a shared file system).
pub(super) const SPEC: &str = "spec.json";
/// The batch script.
pub(super) const SCRIPT: &str = "job.sh";
/// SLURM's own output of the job (the task's logs are the supervisor's).
pub(super) const OUTPUT: &str = "slurm.out";
/// In a batch's folder: its runs' folders, one a line, element `i` on
/// line `i + 1`.
pub(super) const INDEX: &str = "index";
/// In a batch's folder: its runs' specs, one a line, element `i`'s on line
/// `i + 1` (its supervisor reads that line: no file of its own to write
/// for each run on a shared file system); every element's lock file too
/// (each locks the byte of its run id).
pub(super) const SPECS: &str = "specs";
/// The environment a supervisor under SLURM takes from its job rather than
/// from the spec: the GPUs SLURM allocated and the job's identity (its
/// array's and its index there, for an element of a job array).
pub const FROM_JOB: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "SLURM_JOB_ID",
    "SLURM_JOB_NODELIST",
    "SLURMD_NODENAME",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
];

/// The node's GPU sampler a GPU job's script starts beside the supervisor
/// (`gpu/node.rs`): the `nightjard` binary (at the same path on every node)
/// and its orders.
#[derive(Debug, Clone)]
pub(super) struct Sampler {
    /// The `nightjard` binary.
    pub program: PathBuf,
    /// Backend and period.
    pub spec: crate::gpu::node::SamplerSpec,
}

/// Makes the run folder (with, for a GPU job sampled on its node, the
/// sampler's spec) and the run's spec what a SLURM node needs; the spec
/// is written once the run's job is known ([`write_spec`]).
pub(super) fn prepare(sampler: Option<&Sampler>, run: &mut Launch) -> Result<()> {
    let dir = &run.dir;
    if let Some(runs) = dir.parent() {
        std::fs::create_dir_all(runs).with_context(|| format!("make {}", runs.display()))?;
    }
    // Made anew, the daemon's: a folder of that name is one an earlier
    // database's run of the same id left, maybe handed to its owner, who
    // could replace the spec written into it before the job reads it.
    if let Err(e) = std::fs::create_dir(dir) {
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(e).with_context(|| format!("make {}", dir.display()));
        }
        tracing::warn!(
            "{}: left by an earlier run of the same id (a fresh database?); removed and made anew",
            dir.display()
        );
        std::fs::remove_dir_all(dir)
            .and_then(|()| std::fs::create_dir(dir))
            .with_context(|| {
                format!(
                    "remove the stale run folder {} and make it anew",
                    dir.display()
                )
            })?;
    }
    let spec = &mut run.spec;
    spec.lock_file = dir.join(SPEC);
    // SLURM confines the job; the login node's cgroups and cores mean
    // nothing on the node.
    spec.cgroup = None;
    spec.cpus.clear();
    spec.from_job = FROM_JOB.iter().map(|s| s.to_string()).collect();
    if let Some(s) = sampler.filter(|_| run.resources.gpus > 0) {
        let mut line = serde_json::to_string(&s.spec).context("write the sampler's spec")?;
        line.push('\n');
        write_private(&dir.join(node::SPEC), line.as_bytes())?;
    }
    Ok(())
}

/// Writes the specs of a batch's `runs` (its elements, in order) into its
/// folder `dir`, one a line.
pub(super) fn write_specs(dir: &Path, runs: &[&Launch]) -> Result<()> {
    let mut text = String::new();
    for run in runs {
        text.push_str(&serde_json::to_string(&run.spec).context("write a run spec")?);
        text.push('\n');
    }
    write_private(&dir.join(SPECS), text.as_bytes())
}

/// Writes `run`'s spec into its folder (a job of its own).
pub(super) fn write_spec(run: &Launch) -> Result<()> {
    let mut line = serde_json::to_string(&run.spec).context("write the run spec")?;
    line.push('\n');
    write_private(&run.dir.join(SPEC), line.as_bytes())
}

/// Moves SLURM's output of element `index` of the batch whose folder is
/// `batch_dir` into the run folder `run_dir` (as `slurm.out`, where a job
/// of its own has it), once its run's end is recorded.
///
/// An array of its owner's jobs has its outputs in the batch's `out`
/// folder, theirs (`owner.rs`); a rename moves whatever entry is there
/// without reading or following it.
pub(super) fn keep_output(batch_dir: &Path, index: u32, run_dir: &Path) {
    let name = format!("slurm-{index}.out");
    let owners = batch_dir.join(super::owner::OUT).join(&name);
    let from = if std::fs::symlink_metadata(&owners).is_ok() {
        owners
    } else {
        batch_dir.join(name)
    };
    if let Err(e) = std::fs::rename(&from, run_dir.join(OUTPUT))
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::debug!("{}: not moved to its run folder: {e}", from.display());
    }
}

/// Whether every run the index of the batch folder `batch_dir` names has
/// ended: its folder holds a status (its supervisor's, or the daemon's
/// tombstone), or is gone. No index, or one not whole (being written):
/// not ended.
pub(super) fn all_ended(batch_dir: &Path) -> bool {
    let Ok(index) = std::fs::read_to_string(batch_dir.join(INDEX)) else {
        return false;
    };
    if !index.ends_with('\n') {
        return false;
    }
    index.lines().all(|run| {
        let run = Path::new(run);
        std::fs::symlink_metadata(run.join(files::STATUS)).is_ok()
            || std::fs::symlink_metadata(run).is_err()
    })
}

/// Writes a file only the daemon's user reads (the spec holds the task's
/// environment), replacing any earlier one.
pub(super) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("write {}", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("write {}", path.display()))
}

/// Leaves a status in the run folder `dir` of a run given back before its
/// job was known to land.
pub(super) fn tombstone(dir: &Path, why: &str) {
    let status = status(
        files::EndedBy::SpawnFailed,
        format!("given back to the queue: sbatch failed ({why})"),
    );
    if let Err(e) = files::write_atomic(dir, files::STATUS, &status) {
        tracing::warn!("{}: cannot leave a status: {e}", dir.display());
    }
}

/// Leaves the daemon's status in the run folder `dir` of a run whose end
/// it recorded from SLURM's word alone (its supervisor left none): the run
/// has ended for whoever reads the folder, and its batch's folder can go
/// ([`all_ended`]). Read back (a daemon stopped before the end was
/// recorded), it says `lost`, as SLURM's word does.
pub(super) fn ended_without_status(dir: &Path) {
    leave_status(
        dir,
        files::EndedBy::Lost,
        "its supervisor left no status; the daemon recorded its end from SLURM",
    );
}

/// Leaves a `cancelled` status in the run folder `dir` of a run cancelled
/// before its SLURM job was known (its `sbatch` in flight): a supervisor
/// that starts later finds the run ended and never starts the task, even
/// when the job lands while no daemon is up to `scancel` it.
pub(super) fn cancelled_before_its_job(dir: &Path) {
    leave_status(
        dir,
        files::EndedBy::Cancelled,
        "cancelled before its SLURM job started; the task never ran",
    );
}

/// Leaves the daemon's status in `dir`, never over a status already there:
/// one its supervisor leaves late (a shared folder's cache) is kept, whole
/// (written aside, then linked in only where no status is).
fn leave_status(dir: &Path, ended_by: files::EndedBy, message: &str) {
    if std::fs::symlink_metadata(dir.join(files::STATUS)).is_ok() || !dir.is_dir() {
        return;
    }
    let status = status(ended_by, message.into());
    // A name the folder's owner cannot have taken first.
    let aside = dir.join(format!(
        ".status.daemon.{}.{}.tmp",
        std::process::id(),
        crate::time::now_ms()
    ));
    let linked = serde_json::to_vec_pretty(&status)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            use std::io::Write;
            // Made anew, never through a link: the folder may be the owner's.
            files::create_new(&aside)?.write_all(&bytes)
        })
        .and_then(|()| std::fs::hard_link(&aside, dir.join(files::STATUS)));
    let _ = std::fs::remove_file(&aside);
    match linked {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            tracing::warn!("{}: cannot leave a status: {e}", dir.display());
        }
        _ => {}
    }
}

/// A status the daemon leaves, ended now.
fn status(ended_by: files::EndedBy, message: String) -> files::RunStatus {
    files::RunStatus {
        started_at: 0,
        finished_at: crate::time::now_ms(),
        exit_code: None,
        signal: None,
        ended_by,
        message: Some(message),
        log_dropped: 0,
        log_error: None,
        detected: None,
    }
}

/// Whether `dir` holds a status its supervisor left.
pub(super) fn status_in(dir: &Path) -> Option<crate::store::RunOutcome> {
    files::read_json::<files::RunStatus>(dir, files::STATUS)
        .ok()
        .flatten()
        .map(|s| s.outcome())
}

/// Why a user other than the daemon's could change what is in the runs
/// folder, if one could: the shared folder's and the runs folder's (owner,
/// mode), `ours` being the owner the file system gives the daemon's files.
/// The runs folder must be the daemon's and writable by it alone; the
/// folder above it, where it can be renamed away, the daemon's or root's,
/// and writable by no other user, or sticky.
pub(super) fn exposed(shared: (u32, u32), runs: (u32, u32), ours: u32) -> Option<String> {
    let (owner, mode) = runs;
    if owner != ours {
        return Some(format!(
            "its runs folder is owned by uid {owner}, not by the daemon's user (uid {ours}); `chown {ours}` it"
        ));
    }
    if mode & 0o022 != 0 {
        return Some(format!(
            "its runs folder is writable by group or others (mode {:o}); `chmod go-w` it",
            mode & 0o7777
        ));
    }
    let (owner, mode) = shared;
    if owner != ours && owner != 0 {
        return Some(format!(
            "it is owned by uid {owner}, not by the daemon's user (uid {ours}) or root, and its owner can rename the runs folder"
        ));
    }
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Some(format!(
            "it is writable by group or others (mode {:o}) and not sticky, so they can rename the runs folder; `chmod go-w` it, or `chmod +t`",
            mode & 0o7777
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_folder_another_user_can_write_runs_into_is_refused() {
        // The daemon's (root's) runs folder, in a folder only root writes.
        assert_eq!(exposed((0, 0o40755), (0, 0o40700), 0), None);
        // A sticky shared scratch: nobody can rename the daemon's runs folder.
        assert_eq!(exposed((0, 0o41777), (0, 0o40700), 0), None);
        // Root squashed to nobody on NFS: the owner is what the probe got.
        assert_eq!(exposed((65534, 0o40755), (65534, 0o40700), 65534), None);
        // A runs folder another user made first, or opened to others.
        let why = exposed((0, 0o41777), (1000, 0o40777), 0).unwrap();
        assert!(why.contains("owned by uid 1000"), "{why}");
        let why = exposed((0, 0o40755), (0, 0o40777), 0).unwrap();
        assert!(why.contains("runs folder is writable"), "{why}");
        // A shared folder the lab's group can write: the runs folder renamed away.
        let why = exposed((0, 0o40775), (0, 0o40700), 0).unwrap();
        assert!(why.contains("not sticky"), "{why}");
        let why = exposed((1000, 0o40755), (0, 0o40700), 0).unwrap();
        assert!(why.contains("owned by uid 1000"), "{why}");
    }

    #[test]
    fn a_run_folder_an_earlier_database_left_is_made_anew_the_daemons() {
        use std::os::unix::fs::MetadataExt;
        let shared = tempfile::tempdir().unwrap();
        let dir = shared.path().join("runs").join("7");
        // Run 7 of an earlier database, handed to its owner, who left a
        // file and a link where the new run 7's spec goes.
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("planted"), "theirs").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join(SPEC)).unwrap();
        if crate::users::euid() == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        }
        let spec = serde_json::from_value(serde_json::json!({
            "run_id": 7, "task_id": 1, "argv": ["true"], "env": [], "workdir": "/",
            "timeout_ms": null, "grace_ms": 1000, "log_cap": 1024, "cpus": [],
            "mem_limit": null, "cgroup": null, "lock_file": "/nonexistent",
        }))
        .unwrap();
        let mut run = Launch {
            run: 7,
            dir: dir.clone(),
            spec,
            resources: Default::default(),
            started_at: 0,
            steady: std::time::Instant::now(),
        };
        prepare(None, &mut run).unwrap();
        let m = std::fs::symlink_metadata(&dir).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.uid(), crate::users::euid());
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
    }
}
