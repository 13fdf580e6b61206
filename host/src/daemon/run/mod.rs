//! One run, from its claim to its end: the environment built, the run
//! handed to its executor (the local supervisor: `local.rs`; a SLURM job:
//! `slurm/`), checkpoints
//! and manifests, the end recorded exactly once and judged (validators,
//! outputs, energy), and the watchdog's own deadlines for supervisors that
//! do not act.

pub(in crate::daemon) mod adopt;
pub(in crate::daemon) mod checkpoint;
pub(in crate::daemon) mod checkpoint_find;
pub(in crate::daemon) mod end;
pub(in crate::daemon) mod energy;
pub mod environment;
pub mod executor;
pub(in crate::daemon) mod local;
pub(in crate::daemon) mod manifest;
pub(in crate::daemon) mod outputs;
pub(in crate::daemon) mod postrun;
pub(in crate::daemon) mod runenv;
pub mod slurm;
pub(in crate::daemon) mod start;
pub(in crate::daemon) mod watchdog;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::daemon::condition::Condition;
use crate::sandbox::cgroup::CgroupBase;
use crate::scheduler::Placement;

/// A run in progress, as the daemon tracks it.
#[derive(Debug, Clone)]
pub(in crate::daemon) struct Held {
    /// Its task.
    pub task: i64,
    /// What it was given.
    pub placement: Placement,
    /// Its supervisor's pid (= its session id); 0 until started.
    pub session: u32,
    /// Its run folder.
    pub dir: PathBuf,
    /// Its task's owner (uid), for `[quotas]`.
    pub owner: u32,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// By when its supervisor must have ended it (`watchdog.rs`).
    pub deadline: Option<watchdog::Deadline>,
    /// How long it is expected to run, ms (backfill).
    pub estimate: Option<i64>,
    /// A user cancelled its task before its session was known (an
    /// executor that holds its round's runs for one `sbatch`): stopped
    /// once it is, or not submitted at all.
    pub cancel_asked: bool,
}

impl crate::daemon::state::Daemon {
    /// Records when batch-system runs' tasks began on their nodes (`began`:
    /// run and Unix ms), as their start: the time their jobs waited is not
    /// run time (reports, energy, estimates, backfill). A node's clock
    /// ahead of ours is taken as `now`.
    pub(in crate::daemon) fn runs_began(&self, began: &[(i64, i64)], now: i64) {
        for &(run, at) in began {
            let at = at.min(now);
            if let Err(e) = self.store().set_run_began(run, at) {
                tracing::warn!("run {run}: cannot record when its task began: {e}");
                continue;
            }
            if let Some(h) = crate::daemon::state::lock(&self.runs.placed).get_mut(&run)
                && at > h.started_at
            {
                h.started_at = at;
            }
        }
    }
}

/// The runs' part of the daemon: the runs in progress (read by the
/// pipeline and the watches too), and what only starting and ending them
/// uses: cgroups, the executor, validators, energy counters.
pub struct Parts {
    /// The runs in progress and what they hold.
    pub(in crate::daemon) placed: Mutex<HashMap<i64, Held>>,
    /// Where per-run cgroups go, if anywhere; else why not.
    cgroup: Result<CgroupBase, String>,
    /// How prepared runs are carried out (the local supervisor, or what
    /// the daemon was given instead).
    executor: Arc<dyn executor::Executor>,
    /// Result validators, made on first use (`Err`: why they cannot run).
    validators: OnceLock<Result<Arc<crate::plugins::validator::Validators>, String>>,
    /// CPU-only runs' RAPL counters at their start.
    rapl_start: Mutex<HashMap<i64, energy::RaplReading>>,
    /// Ended runs' energy the store refused, kept until their end is recorded.
    pending_energy: Mutex<HashMap<i64, crate::gpu::energy::RunEnergy>>,
    /// Starts that fail (a full disk, a locked store), logged per change.
    start_failures: Condition,
    /// Repositories' git states kept between captures (submits and starts).
    pub(in crate::daemon) repos: crate::manifest::git_cache::GitCache,
}

impl Parts {
    /// The runs' part: per-run cgroups under `cgroup` (or why none), runs
    /// carried out by `executor`.
    pub(in crate::daemon) fn new(
        cgroup: Result<CgroupBase, String>,
        executor: Arc<dyn executor::Executor>,
    ) -> Parts {
        Parts {
            placed: Mutex::default(),
            cgroup,
            executor,
            validators: OnceLock::new(),
            rapl_start: Mutex::default(),
            pending_energy: Mutex::default(),
            start_failures: Condition::new("cannot start tasks"),
            repos: Default::default(),
        }
    }

    /// The executor's GPUs by node, when it has nodes (SLURM). Blocking.
    pub fn gpu_nodes(&self) -> Option<Vec<executor::GpuOnNode>> {
        self.executor.gpu_nodes()
    }

    /// The executor, to hand it what a round of starts held
    /// ([`executor::Executor::flush`]).
    pub(in crate::daemon) fn executor(&self) -> Arc<dyn executor::Executor> {
        Arc::clone(&self.executor)
    }

    /// What the executor says of run `run` in progress (a SLURM job's
    /// state and reason), for `why`.
    pub(in crate::daemon) fn describe(&self, run: i64) -> Option<String> {
        self.executor.describe(run)
    }
}
