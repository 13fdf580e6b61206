//! How a claimed and prepared run is carried out: an [`Executor`], handed
//! to the daemon as a value (the local supervisor today, [`super::local`];
//! a simulator's model or a cluster's batch system can be given instead,
//! without touching the pass that decides what starts).

use std::path::PathBuf;
use std::sync::Arc;

use crate::daemon::state::Daemon;
use crate::sandbox::files::RunSpec;

/// A run the daemon has claimed, recorded and prepared: what an executor
/// is handed to carry out.
#[derive(Debug)]
pub struct Launch {
    /// The run's id.
    pub run: i64,
    /// Its run folder (made; its lock file, logs and status go there).
    pub dir: PathBuf,
    /// Everything the run needs, as the supervisor reads it.
    pub spec: RunSpec,
    /// What its task asked for (a batch system's job asks the same).
    pub resources: crate::task::model::Resources,
    /// When it started, Unix ms on the daemon's clock.
    pub started_at: i64,
    /// The same moment on the monotonic clock: a run's length is measured
    /// from here, so a wall clock stepped meanwhile does not change it.
    pub steady: std::time::Instant,
}

/// What an executor calls once a run's session exists, with its id
/// (`Executor::launch`) and, where the executor names the run's job
/// otherwise, that name (`SLURM job 812_3`): the daemon records both (the
/// name with the run's note, which `show` prints).
pub type Started = Box<dyn FnOnce(u32, Option<String>) + Send>;

/// How a run is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A cancel: the task is ended, with the grace `[sandbox] grace` gives.
    Cancel,
    /// A preemption of a task that saves checkpoints: its own signal and
    /// grace, so it saves one first.
    Checkpoint,
    /// Now, with no grace (the daemon's deadline passed).
    Kill,
}

/// A launch that did not reach the executor and may later (a batch system
/// that did not answer): the run is given back to the queue, its attempt
/// not counted, where any other launch error fails it.
#[derive(Debug)]
pub struct TryLater(pub String);

impl std::fmt::Display for TryLater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TryLater {}

/// One GPU of a batch system's node, for `nightjar gpus`.
#[derive(Debug, Clone)]
pub struct GpuOnNode {
    /// The node.
    pub node: String,
    /// What `gpus` shows as its name (`n1 gpu 0 (a100)`).
    pub name: String,
    /// Whether its node takes work.
    pub open: bool,
    /// Why not, or that the batch system has it allocated.
    pub reason: Option<String>,
    /// The daemon's runs whose jobs run on its node.
    pub runs: Vec<i64>,
    /// Its last reading by the node sampler of one of those runs, and its
    /// memory (none: no run of the daemon's samples it).
    pub reading: Option<(crate::gpu::GpuReading, u64)>,
}

/// What became of a run while no daemon watched it, as its executor tells.
#[derive(Debug)]
pub enum Adopted {
    /// A local run: probe its supervisor's lock and pid (`liveness`).
    Local,
    /// Still on its way, as session `0` (named `1`, as [`Started`] names a
    /// job, where the executor names it otherwise); the executor watches it
    /// again and reports its end.
    Live(u32, Option<String>),
    /// Over: record this.
    Ended(crate::store::RunOutcome),
    /// Nothing of it ever started: give it back to the queue.
    NeverStarted,
}

/// Carries out prepared runs and reports their ends.
///
/// The contract:
/// - `launch` returns once the run's session exists (or with why it
///   cannot: then nothing of it started, and the daemon records the run as
///   failed to prepare, once), or once the run is held for
///   [`Executor::flush`], which the daemon calls after each round of
///   starts (a batch system submits what a round started as one job
///   array). A held run that cannot be submitted then is handed to
///   [`Daemon::launch_failed`] with why, as `launch` would have returned it.
/// - It calls `started` with the session's id (the local supervisor's pid,
///   a batch system's job id) before the task itself begins, holding none
///   of its own locks: the daemon records the id then, so a daemon
///   restarted at any moment after finds the run by it.
/// - It reports the run's end through [`Daemon::report_end`] until that
///   returns true (the end is judged, recorded and on disk; a repeat of a
///   recorded end changes nothing). `report_end` blocks: call it off an
///   async runtime's thread.
/// - Only the local executor may instead leave its end in the run folder
///   for [`Daemon::record_until_done`] (a supervisor that died before its
///   report was acknowledged): that reads the folder's `status.json` and
///   run lock, which only a local run has.
///
/// Stopping a run goes through [`Executor::stop`] too (cancel, preemption,
/// the watchdog's kill); what the watchdog does past that (the run's
/// status written in its folder, its process tree killed) is a local
/// run's.
pub trait Executor: Send + Sync {
    /// Starts `run`. An error means nothing of it started: the daemon
    /// records the run as failed to prepare, or, for a [`TryLater`], gives
    /// it back to the queue.
    fn launch(&self, daemon: &Arc<Daemon>, run: Launch, started: Started) -> anyhow::Result<()>;

    /// Submits the runs `launch` held (none for an executor that holds
    /// none). The daemon calls it after each round of starts.
    fn flush(&self, _daemon: &Arc<Daemon>) {}

    /// Whether `launch` holds every run for [`Executor::flush`]: then the
    /// daemon hands it runs whose claims may not be on disk yet, and
    /// `flush` makes them so ([`Daemon::durable`], one sync for the
    /// round) before it submits any, or gives each back. Else each claim
    /// is on disk before `launch` is called.
    fn holds(&self) -> bool {
        false
    }

    /// Asks run `run` (session `session`, run folder `dir`) to stop, `how`
    /// says. Its end is reported as any other; the daemon keeps its own
    /// deadline meanwhile.
    fn stop(&self, run: i64, session: u32, dir: &std::path::Path, how: Stop);

    /// The sessions (process ids) it started that have not ended: without
    /// cgroups, any other child of the daemon's is an orphan of a dead one.
    fn sessions(&self) -> Vec<i32>;

    /// Whether its sessions are processes of this machine (supervisor
    /// pids): only then does the watchdog kill a run's process tree and a
    /// restarted daemon probe a run's lock. A batch system's sessions are
    /// its job ids, kept by [`Executor::adopt`] instead.
    fn local(&self) -> bool {
        true
    }

    /// Why no run may be handed to it now (a batch system with as many
    /// jobs waiting as it may keep), for `why`; `None`: it takes more.
    fn busy(&self) -> Option<String> {
        None
    }

    /// A batch system's GPUs, node by node (`None`: it has no nodes of its
    /// own, or cannot tell now). Blocking: it may ask the batch system.
    fn gpu_nodes(&self) -> Option<Vec<GpuOnNode>> {
        None
    }

    /// What it knows of run `run` in progress beyond the daemon's record
    /// (a batch system's job state and reason), for `why` and `show`.
    fn describe(&self, _run: i64) -> Option<String> {
        None
    }

    /// At a daemon's start, what became of `run` (recorded as running).
    /// An error: it cannot tell now (the daemon does not start).
    fn adopt(&self, _daemon: &Arc<Daemon>, _run: &crate::store::RunRow) -> anyhow::Result<Adopted> {
        Ok(Adopted::Local)
    }
}
