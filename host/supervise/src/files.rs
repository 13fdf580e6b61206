//! The run folder's files and the supervisor's report. The daemon hands the
//! supervisor its [`RunSpec`] as one JSON line on stdin. The supervisor holds
//! the run's lock (byte `run_id` of the state dir's `runs.lock`, an
//! open-file-description lock) for as long as it lives, and writes
//! `stdout.log`/`stderr.log` into the run folder (both created at the first
//! byte). At the end it sends its [`RunStatus`] as one JSON line on stdout and
//! waits for the daemon's `ok`; only when no daemon acknowledges (it died or
//! restarted) does it write `status.json` (atomically) for the next daemon.

pub use nightjar_core::runlog::{STDERR, STDOUT};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use nightjar_core::api::class::{RunClass, RunOutcome};

/// Status file name; written only when no daemon took the status on stdout.
pub const STATUS: &str = "status.json";
/// The supervisor's own diagnostics.
pub const SUPERVISOR_LOG: &str = "supervisor.log";

/// Everything the supervisor needs to run one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Run id.
    pub run_id: i64,
    /// Task id.
    pub task_id: i64,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// The `NIGHTJAR_SEED` in `env` (recorded by the daemon; the supervisor ignores it).
    #[serde(default)]
    pub seed: u64,
    /// The complete environment of the task.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub workdir: PathBuf,
    /// Wall-clock limit in ms.
    pub timeout_ms: Option<u64>,
    /// SIGTERM-to-SIGKILL grace in ms.
    pub grace_ms: u64,
    /// Bytes kept per stream.
    pub log_cap: u64,
    /// Cores to pin to (empty: no pinning).
    pub cpus: Vec<u32>,
    /// Memory limit in bytes, applied when the cgroup supports it.
    pub mem_limit: Option<u64>,
    /// The cgroup folder to create for the run, when cgroups are in use.
    pub cgroup: Option<PathBuf>,
    /// The state dir's run-lock file; the run's lock is byte `run_id` of it.
    pub lock_file: PathBuf,
    /// The output folder the supervisor makes before the task starts, if any.
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// When not empty, `output` must resolve inside one of these (checked again when made).
    #[serde(default)]
    pub output_roots: Vec<PathBuf>,
    /// The file-mode mask the task runs with (the daemon's own before it chose 077).
    #[serde(default)]
    pub umask: Option<u32>,
    /// What marks a failure's class in the run's output (`[classes]`).
    #[serde(default)]
    pub classes: super::classify::ClassPatterns,
    /// The signal a preemption sends the tree (the supervisor's SIGUSR1);
    /// `None`: SIGTERM, as for a cancel.
    #[serde(default)]
    pub preempt_signal: Option<i32>,
    /// How long a preempted tree gets to save before SIGKILL; `None`: `grace_ms`.
    #[serde(default)]
    pub preempt_grace_ms: Option<u64>,
    /// The checkpoint this attempt resumes from (the command already names it).
    #[serde(default)]
    pub checkpoint: Option<PathBuf>,
    /// What the daemon found when it looked for a checkpoint, for the task's
    /// events; never sent to the supervisor.
    #[serde(skip)]
    pub checkpoint_note: Option<String>,
    /// The run's `manifest.json` as the daemon captured it; the supervisor
    /// writes it into the run folder before the task starts (so the
    /// daemon's scheduling thread never waits for that file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// The user the task runs as (a root daemon's task of another user);
    /// `None`: the supervisor's own user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as: Option<RunAs>,
    /// The podman or docker container the command runs in: stopped through
    /// the runtime with the tree, removed when the run is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<super::container::Control>,
    /// Variables the supervisor takes from its own environment over `env`
    /// (a SLURM job's `CUDA_VISIBLE_DEVICES` and `SLURM_JOB_ID`: what the
    /// batch system allocated on the node); one it does not have keeps
    /// the spec's value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from_job: Vec<String>,
    /// Under SLURM, the batch (its first run's id) and index of the job
    /// array element that runs it, when one does, for whoever reads the
    /// spec (a restarted daemon finds it from the batch's index, its own;
    /// the supervisor does not read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_element: Option<(i64, u32)>,
}

impl RunSpec {
    /// Takes the [`RunSpec::from_job`] variables `lookup` has over `env`.
    pub fn take_from_job(&mut self, lookup: impl Fn(&str) -> Option<String>) {
        for name in &self.from_job {
            let Some(value) = lookup(name) else { continue };
            match self.env.iter_mut().find(|(k, _)| k == name) {
                Some(kv) => kv.1 = value,
                None => self.env.push((name.clone(), value)),
            }
        }
    }
}

/// The identity a task takes before its command starts, resolved from the
/// user database when the run starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunAs {
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Every group of the user (`id -G`), the primary one first.
    pub groups: Vec<u32>,
    /// Login name, for messages.
    pub name: String,
    /// Home folder.
    pub home: PathBuf,
}

/// Why the run's main process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndedBy {
    /// It exited or died on its own.
    Exited,
    /// The supervisor killed it at its timeout.
    Timeout,
    /// The supervisor killed it on a cancel request.
    Cancelled,
    /// It could not be started.
    SpawnFailed,
    /// The supervisor vanished without reporting (written by the daemon).
    Lost,
    /// The supervisor died while the run's processes lived on; the daemon
    /// killed the tree (written by the daemon).
    SupervisorDied,
}

/// What the supervisor writes when the run is over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStatus {
    /// When the process started (Unix ms).
    pub started_at: i64,
    /// When the run ended (Unix ms).
    pub finished_at: i64,
    /// Exit code, if it exited.
    pub exit_code: Option<i32>,
    /// Signal, if one killed it.
    pub signal: Option<i32>,
    /// Why it ended.
    pub ended_by: EndedBy,
    /// A human explanation.
    pub message: Option<String>,
    /// Bytes of stdout/stderr dropped by the cap (oldest first).
    pub log_dropped: u64,
    /// A log write error (for example a full disk), if any.
    pub log_error: Option<String>,
    /// A class found in the exit code, OOM kills or output of a failed run.
    #[serde(default)]
    pub detected: Option<super::classify::Detected>,
}

impl RunStatus {
    /// The store's view of this status.
    pub fn outcome(&self) -> RunOutcome {
        let class = match (self.ended_by, self.exit_code, self.signal) {
            (EndedBy::Timeout, _, _) => RunClass::Timeout,
            (EndedBy::Cancelled, _, _) => RunClass::Cancelled,
            (EndedBy::SpawnFailed, _, _) => RunClass::AppError,
            (EndedBy::Lost, _, _) => RunClass::Lost,
            // Not the task's doing as far as anyone can tell: retried as a lost run is.
            (EndedBy::SupervisorDied, _, _) => RunClass::Lost,
            (EndedBy::Exited, Some(0), _) => RunClass::Ok,
            (EndedBy::Exited, Some(_), _) => RunClass::AppError,
            (EndedBy::Exited, None, _) => RunClass::Killed,
        };
        let mut message = self.message.clone();
        // A failure the supervisor could name is classed by it, hint first.
        let found = self
            .detected
            .as_ref()
            .filter(|_| matches!(class, RunClass::AppError | RunClass::Killed))
            .map(|d| (d.class, d));
        let class = match found {
            Some((c, d)) => {
                message = Some(match message {
                    Some(m) => format!("{}; {m}", d.hint),
                    None => d.hint.clone(),
                });
                c
            }
            None => class,
        };
        if let Some(e) = &self.log_error {
            let m = format!("logs incomplete: {e}");
            message = Some(match message {
                Some(x) => format!("{x}; {m}"),
                None => m,
            });
        }
        RunOutcome {
            class,
            exit_code: self.exit_code,
            signal: self.signal,
            finished_at: self.finished_at,
            message,
        }
    }
}

/// The marker a supervisor leaves in its run folder right before it
/// starts the task: a run without it never ran its command (see
/// `store/give_back.rs`).
pub const STARTED: &str = "started";

/// Marks the run in `dir` started, durably (the file and the folder
/// flushed): from here on the run counts as an attempt.
pub fn mark_started(dir: &Path) -> std::io::Result<()> {
    let mut f = std::fs::File::create(dir.join(STARTED))?;
    f.write_all(crate::time::now_ms().to_string().as_bytes())?;
    f.sync_all()?;
    std::fs::File::open(dir)?.sync_all()
}

/// Whether the run in `dir` reached its task (its supervisor marked it).
pub fn was_started(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(STARTED)).is_ok()
}

/// Writes `value` as JSON to `dir/name` atomically: a temporary file renamed
/// into place, so a reader (or a daemon restarted after `kill -9`) sees no
/// file or the whole file, never a part.
///
/// There is no fsync: on power loss the file may be missing or unreadable,
/// and an unreadable status is treated exactly like a missing one (the run is
/// `lost` and requeued per its retry settings), which is also what a reboot
/// does to runs that were in flight. The database (WAL, synchronous=NORMAL)
/// makes the same trade.
///
/// The temporary file is made anew, never opened through a link or over
/// a file already there: a daemon running as root writes statuses into
/// run folders a task's owner may control (SLURM, `job_user = "owner"`).
pub fn write_atomic<T: Serialize>(dir: &Path, name: &str, value: &T) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = create_new(&tmp)?;
    f.write_all(&serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?)?;
    drop(f);
    std::fs::rename(&tmp, dir.join(name))
}

/// Creates `path` anew (an earlier file or link of that name removed
/// first, never followed), mode 0644.
pub fn create_new(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(path)
}

/// Writes `text` to `dir/name` through a temporary file renamed into place,
/// making `dir` first.
pub fn write_text_atomic(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, dir.join(name))
}

/// The largest JSON file of a run folder read (a manifest of many inputs
/// is the largest the daemon writes).
pub const JSON_MAX: u64 = 64 << 20;

/// Reads a JSON file of the run folder; `Ok(None)` when it does not exist.
pub fn read_json<T: for<'de> Deserialize<'de>>(
    dir: &Path,
    name: &str,
) -> std::io::Result<Option<T>> {
    // A plain file only, and a bounded one: the run folder may be its
    // task's owner's (SLURM, `job_user = "owner"`).
    match nightjar_core::plain_file::read(&dir.join(name), JSON_MAX) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| std::io::Error::other(format!("{}: {e}", dir.join(name).display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}
