//! A SLURM run's folder (in the shared folder every node sees): the spec
//! its batch step reads, the batch script, the lock file, and the status
//! the supervisor leaves (or the daemon's tombstone of a run given back).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::daemon::run::executor::Launch;
use crate::gpu::node;
use crate::sandbox::files;
use crate::sandbox::launch::SupervisorCmd;

/// The spec file the batch step reads on its stdin.
pub(super) const SPEC: &str = "spec.json";
/// The batch script.
pub(super) const SCRIPT: &str = "job.sh";
/// SLURM's own output of the job (the task's logs are the supervisor's).
pub(super) const OUTPUT: &str = "slurm.out";
/// The run's lock file, in the run folder (the state dir is not shared).
pub(super) const LOCK: &str = "run.lock";
/// The environment a supervisor under SLURM takes from its job rather than
/// from the spec: the GPUs SLURM allocated and the job's identity.
pub const FROM_JOB: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "SLURM_JOB_ID",
    "SLURM_JOB_NODELIST",
    "SLURMD_NODENAME",
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

/// Writes the spec, the lock file and the batch script (which execs
/// `supervisor` on the run folder, and for a GPU job first starts
/// `sampler` beside it) into the run folder; the script's path.
pub(super) fn prepare(
    supervisor: &SupervisorCmd,
    sampler: Option<&Sampler>,
    run: &mut Launch,
) -> Result<PathBuf> {
    let dir = &run.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("make {}", dir.display()))?;
    let lock_file = dir.join(LOCK);
    std::fs::File::create(&lock_file).with_context(|| format!("create {}", lock_file.display()))?;
    let (id, task) = (run.run, run.spec.task_id);
    let spec = &mut run.spec;
    spec.lock_file = lock_file;
    // SLURM confines the job; the login node's cgroups and cores mean
    // nothing on the node.
    spec.cgroup = None;
    spec.cpus.clear();
    spec.from_job = FROM_JOB.iter().map(|s| s.to_string()).collect();
    let mut line = serde_json::to_string(spec).context("write the run spec")?;
    line.push('\n');
    write_private(&dir.join(SPEC), line.as_bytes())?;
    let quote = |p: &Path| shell_quote(&p.display().to_string());
    let mut command = vec![quote(&supervisor.program)];
    command.extend(supervisor.prefix.iter().map(|a| shell_quote(a)));
    command.push(quote(dir));
    // `$$` is the shell's pid, which `exec` hands to the supervisor, whose
    // session and descendants are the run's processes. The sampler starts
    // detached (a subshell that leaves it behind), so it is not in the
    // supervisor's tree: the task's signals and the wait for its processes
    // do not reach it; SLURM ends it with the job.
    let sample = match sampler.filter(|_| run.resources.gpus > 0) {
        Some(s) => {
            let mut line = serde_json::to_string(&s.spec).context("write the sampler's spec")?;
            line.push('\n');
            write_private(&dir.join(node::SPEC), line.as_bytes())?;
            format!(
                "({} {} {} $$ </dev/null >/dev/null 2>>{} &)\n",
                quote(&s.program),
                node::VERB,
                quote(dir),
                quote(&dir.join(node::LOG)),
            )
        }
        None => String::new(),
    };
    let script = format!(
        "#!/bin/sh\n# Run {} of task {}: nightjar's supervisor on the node SLURM picked.\n{}exec {} < {}\n",
        id,
        task,
        sample,
        command.join(" "),
        quote(&dir.join(SPEC)),
    );
    let path = dir.join(SCRIPT);
    write_private(&path, script.as_bytes())?;
    Ok(path)
}

/// Writes a file only the daemon's user reads (the spec holds the task's
/// environment), replacing any earlier one.
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
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

/// `s` in single quotes for sh.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Leaves a status in the run folder `dir` of a run given back before its
/// job was known to land.
pub(super) fn tombstone(dir: &Path, why: &str) {
    let status = files::RunStatus {
        started_at: 0,
        finished_at: crate::time::now_ms(),
        exit_code: None,
        signal: None,
        ended_by: files::EndedBy::SpawnFailed,
        message: Some(format!("given back to the queue: sbatch failed ({why})")),
        log_dropped: 0,
        log_error: None,
        detected: None,
    };
    if let Err(e) = files::write_atomic(dir, files::STATUS, &status) {
        tracing::warn!("{}: cannot leave a status: {e}", dir.display());
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
    use super::exposed;

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
}
