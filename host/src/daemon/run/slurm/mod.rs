//! The SLURM executor (`[executor] kind = "slurm"`): each run is one SLURM
//! job whose batch step is nightjar's own supervisor on the node, reading
//! its spec from the run folder (in `[executor] shared_dir`, which every
//! node sees) and leaving its `status.json` there. The daemon submits with
//! `sbatch`, finds its jobs again by their comment (`squeue`), stops them
//! with `scancel`, and reads each end from the run folder (`poll.rs`).
//!
//! Exactly once: the run is claimed (on disk) before `sbatch`; a daemon
//! restarted at any instant finds a submitted job by its comment, waits for
//! an `sbatch` still in flight, and only gives a run back to the queue when
//! no job of it exists and its supervisor never started it ([`adopt`]).
//!
//! Whose job a run is: with `job_user = "owner"` (the default) a root
//! daemon submits each task's run as its owner's (`sbatch --uid`), hands
//! the run folder to them, and reads it as a folder they control
//! (`owner.rs`); with `job_user = "daemon"` the supervisor runs as the
//! daemon's user and drops the task to its owner as a local run does.

mod acct;
mod ask;
mod batch;
mod check;
pub use check::sized;
use check::tag;
pub mod cli;
mod cmd;
mod ends;
mod folder;
mod index;
mod live;
mod nodes;
pub(crate) mod owner;
mod poll;
mod script;
mod trust;

use std::collections::HashMap;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Result;

use cli::JobId;

use super::executor::{Adopted, Executor, GpuOnNode, Launch, Started, Stop};
use crate::config::ExecutorConfig;
use crate::daemon::state::{Daemon, lock};
use crate::sandbox::launch::SupervisorCmd;
use crate::store::RunRow;

/// One of this daemon's jobs.
#[derive(Debug, Clone)]
struct Job {
    /// SLURM's job id (an array's element: its array's and its index).
    id: JobId,
    /// An array's element: its batch and index (`folder::BATCH`).
    element: Option<(i64, u32)>,
    /// The run folder.
    dir: PathBuf,
    /// SLURM's state at the last poll (`PENDING` until one says otherwise).
    state: String,
    /// SLURM's reason at the last poll.
    reason: String,
    /// The nodes it runs on, at the last poll.
    nodes: String,
    /// Whether its task's start on the node is recorded as the run's start.
    began: bool,
    /// Whether nightjar asked it to stop.
    asked: bool,
    /// Polls that found it ended with no status yet (a shared folder's
    /// cache can show the file a moment late).
    unreported: u32,
    /// Since when (ms) its end waits for SLURM's accounting to have it.
    accounting_since: Option<i64>,
    /// The user whose job it may be besides the daemon's: its run
    /// folder's owner (`owner.rs`).
    owner: u32,
    /// The first and the last poll that found it `RUNNING` (ms): what the
    /// daemon saw itself of a job whose supervisor's word is its owner's.
    running: Option<(i64, i64)>,
}

impl Job {
    /// Job `id` of the run in `dir` (an array's `element`), as just
    /// submitted (or found): waiting until a poll says otherwise.
    fn new(id: JobId, dir: PathBuf, element: Option<(i64, u32)>) -> Job {
        Job {
            owner: owner::owner_of(&dir),
            running: None,
            id,
            element,
            dir,
            state: "PENDING".into(),
            reason: String::new(),
            nodes: String::new(),
            began: false,
            asked: false,
            unreported: 0,
            accounting_since: None,
        }
    }
}

/// Runs each run as a SLURM job.
pub struct SlurmExecutor {
    cfg: ExecutorConfig,
    /// The batch step's command (the node must have it at the same path).
    supervisor: SupervisorCmd,
    /// The GPU sampler a GPU job starts on its node (none: `node_gpus = "none"`).
    sampler: Option<folder::Sampler>,
    /// This daemon's mark in job comments: `nightjar:<host>-<state dir hash>`.
    tag: String,
    /// The jobs of runs in progress, by run id.
    jobs: Arc<Mutex<HashMap<i64, Job>>>,
    /// The runs of job array elements in progress, by (batch, index).
    /// Never locked with `jobs` held, nor `jobs` with it held.
    elements: Arc<Mutex<HashMap<(i64, u32), i64>>>,
    /// The runs `launch` held for the round's `sbatch` (`flush`), their
    /// folders not made yet.
    held: Mutex<Vec<batch::Held>>,
    /// The poller, started with the first job.
    poller: OnceLock<()>,
    /// Until when no job is submitted: SLURM did not answer the last sbatch.
    down_until: Mutex<Option<std::time::Instant>>,
    /// While runs are adopted at the daemon's start: each run folder the
    /// batches' indexes list, with its element (read once, at the first).
    adopting: Mutex<Option<HashMap<PathBuf, (i64, u32)>>>,
    /// The running jobs' node samples, read at each poll (`live.rs`).
    lives: Arc<live::Lives>,
}

/// The shared folder's folder of run folders.
const RUNS: &str = "runs";
/// The shared folder's folder of job arrays' folders (`batch.rs`).
const BATCHES: &str = "batches";

/// The least wait after SLURM did not answer an sbatch.
const BACKOFF: std::time::Duration = std::time::Duration::from_secs(5);

impl SlurmExecutor {
    /// An executor for `cfg`, its batch step started from the `nightjard`
    /// binary at `exe` (its `nightjar-supervise` sibling when there is one).
    /// `state_dir` names this daemon in its jobs' comments.
    /// A GPU job's node is sampled every `gpu_every` (`[gpu] sample_period`).
    pub fn new(
        cfg: &ExecutorConfig,
        exe: &Path,
        state_dir: &Path,
        gpu_every: std::time::Duration,
    ) -> SlurmExecutor {
        let sampler = crate::gpu::node::wanted(&cfg.node_gpus).then(|| folder::Sampler {
            program: exe.to_path_buf(),
            spec: crate::gpu::node::SamplerSpec {
                backend: cfg.node_gpus.clone(),
                every_ms: u64::try_from(gpu_every.as_millis()).unwrap_or(u64::MAX),
            },
        });
        SlurmExecutor {
            cfg: cfg.clone(),
            supervisor: SupervisorCmd::for_exe(exe),
            sampler,
            tag: tag(state_dir),
            jobs: Arc::default(),
            elements: Arc::default(),
            held: Mutex::default(),
            poller: OnceLock::new(),
            down_until: Mutex::new(None),
            adopting: Mutex::default(),
            lives: Arc::default(),
        }
    }

    /// The run of a job array's element, as `cli::parse_squeue` asks.
    fn element(&self) -> impl Fn(i64, u32) -> Option<i64> + '_ {
        |batch, index| lock(&self.elements).get(&(batch, index)).copied()
    }

    fn start_poller(&self, daemon: &Arc<Daemon>) {
        self.poller.get_or_init(|| {
            let p = poll::Poller {
                daemon: Arc::downgrade(daemon),
                jobs: Arc::clone(&self.jobs),
                elements: Arc::clone(&self.elements),
                lives: Arc::clone(&self.lives),
                batches: self.cfg.shared_dir.join(BATCHES),
                tag: self.tag.clone(),
                every: self.cfg.poll,
            };
            tokio::spawn(p.run());
        });
    }
}

impl Executor for SlurmExecutor {
    fn launch(&self, _daemon: &Arc<Daemon>, run: Launch, started: Started) -> Result<()> {
        // Submitted by `flush`, with the rest of its round: those that ask
        // alike as one job array. Its folder is made there too, once the
        // round's claims are on disk (a run folder the database does not
        // know stops the next start).
        lock(&self.held).push(batch::Held { run, started });
        Ok(())
    }

    fn flush(&self, daemon: &Arc<Daemon>) {
        // Runs are adopted at the start, before any round: the indexes
        // read for it are not needed again.
        lock(&self.adopting).take();
        self.submit_held(daemon);
    }

    fn holds(&self) -> bool {
        true
    }

    fn stop(&self, run: i64, _session: u32, dir: &Path, how: Stop) {
        let job = {
            let mut jobs = lock(&self.jobs);
            let Some(j) = jobs.get_mut(&run) else {
                tracing::debug!("run {run}: no SLURM job to stop");
                // Its sbatch in flight: the job lands later, maybe while no
                // daemon is up to scancel it; its supervisor then finds the
                // run ended and never starts the task.
                if how == Stop::Cancel {
                    folder::cancelled_before_its_job(dir);
                }
                return;
            };
            j.asked = true;
            j.clone()
        };
        let id = job.id.to_string();
        // A supervisor that began its task is signalled (SIGTERM: cancel
        // with the grace; SIGUSR1: the task's checkpoint signal) and ends the
        // run itself. Before that (no `started` marker in the run folder),
        // SLURM may drop a signal: a job it counts as running whose batch
        // step has not launched on the node yet takes the signal and loses
        // it. Such a job is cancelled outright (nothing of the task ran;
        // a supervisor starting at that instant gets SLURM's SIGTERM,
        // which it takes as a cancel). SLURM refuses a signal to a pending
        // job: that one is cancelled too.
        let began = crate::sandbox::files::was_started(&job.dir);
        let signal = match how {
            Stop::Kill => None,
            _ if !began => None,
            Stop::Cancel => Some("--signal=TERM"),
            Stop::Checkpoint => Some("--signal=USR1"),
        };
        if let Some(signal) = signal {
            tracing::info!("run {run}: scancel --batch {signal} {id}");
            match cmd::run("scancel", &["--batch", signal, &id]) {
                Ok(_) => return,
                Err(e) => tracing::info!(
                    "run {run}: SLURM job {id} takes no signal ({e:#}); cancelled instead"
                ),
            }
        }
        tracing::info!("run {run}: scancel {id}");
        if let Err(e) = cmd::run("scancel", &[&id]) {
            tracing::warn!("run {run}: scancel of SLURM job {id} failed: {e:#}");
        }
    }

    fn sessions(&self) -> Vec<i32> {
        // No process of this machine is a job's.
        Vec::new()
    }

    fn local(&self) -> bool {
        false
    }

    fn busy(&self) -> Option<String> {
        if let Some(why) = self.down() {
            return Some(why);
        }
        // Held for this round's sbatch: waiting in SLURM once it returns.
        let held = lock(&self.held).len();
        let pending = lock(&self.jobs)
            .values()
            .filter(|j| cli::waiting(&j.state))
            .count()
            + held;
        (pending >= self.cfg.max_pending as usize).then(|| {
            format!(
                "{pending} of this daemon's jobs already wait in SLURM (executor.max_pending = {}): the next is released when one starts",
                self.cfg.max_pending
            )
        })
    }

    fn gpu_nodes(&self) -> Option<Vec<GpuOnNode>> {
        let out = match cmd::run("sinfo", &["-h", "-N", "-O", cli::SINFO_GPUS]) {
            Ok(out) => out,
            Err(e) => {
                tracing::warn!("cannot list the cluster's GPUs: {e:#}");
                return None;
            }
        };
        let jobs: Vec<(i64, String)> = lock(&self.jobs)
            .iter()
            .map(|(r, j)| (*r, j.nodes.clone()))
            .collect();
        Some(
            cli::parse_nodes(&out)
                .into_iter()
                .map(|g| {
                    let runs: Vec<i64> = (jobs.iter())
                        .filter(|(_, nodes)| cli::on_node(nodes, &g.node))
                        .map(|(r, _)| *r)
                        .collect();
                    (live::reading(&self.lives, &runs, g.index), runs, g)
                })
                .map(|(reading, runs, g)| GpuOnNode {
                    open: g.usable(),
                    reading,
                    runs,
                    reason: match (&g.reason, g.usable(), g.allocated) {
                        (Some(r), false, _) => Some(format!("node {}: {r}", g.state)),
                        (None, false, _) => Some(format!("node {}", g.state)),
                        (_, true, true) => Some("allocated by SLURM".into()),
                        _ => None,
                    },
                    name: format!("{} gpu {} ({})", g.node, g.index, g.model),
                    node: g.node,
                })
                .collect(),
        )
    }

    fn describe(&self, run: i64) -> Option<String> {
        let j = lock(&self.jobs).get(&run).cloned()?;
        Some(match j.reason.as_str() {
            "" | "None" => format!("SLURM job {}: {}", j.id, j.state),
            r => format!("SLURM job {}: {} ({r})", j.id, j.state),
        })
    }

    fn adopt(&self, daemon: &Arc<Daemon>, run: &RunRow) -> Result<Adopted> {
        let dir = PathBuf::from(&run.run_dir);
        let element = lock(&self.adopting)
            .get_or_insert_with(|| index::elements(&self.cfg.shared_dir.join(BATCHES)))
            .get(&dir)
            .copied();
        if let Some(e) = element {
            lock(&self.elements).insert(e, run.id);
        }
        let adopted = poll::adopt(&self.tag, run, element, &self.element())?;
        match adopted {
            Adopted::Live(id, _) => {
                let id = JobId {
                    job: u64::from(id),
                    index: element.map(|e| e.1),
                };
                lock(&self.jobs).insert(run.id, Job::new(id, dir, element));
                self.start_poller(daemon);
            }
            _ => {
                if let Some(e) = element {
                    let batch = self.cfg.shared_dir.join(BATCHES).join(e.0.to_string());
                    folder::keep_output(&batch, e.1, &dir);
                    // Ended with no status of its supervisor's: the
                    // daemon's, so its batch's folder can go.
                    if matches!(adopted, Adopted::Ended(_)) {
                        folder::ended_without_status(&dir);
                    }
                    lock(&self.elements).remove(&e);
                    // The batch's last element to end goes with its folder
                    // (no poller may run to sweep it: nothing else is live).
                    poll::remove_ended(vec![(e.0, batch)], &self.elements);
                }
            }
        }
        Ok(adopted)
    }
}
