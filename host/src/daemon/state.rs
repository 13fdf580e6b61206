//! The daemon's shared state: what its jobs (the pipeline, runs, watches,
//! work) share, and the locks they take it through.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use tokio::sync::watch;

use crate::config::Config;
use crate::gpu::monitor::Monitor;
use crate::sandbox::cgroup::CgroupBase;
use crate::sandbox::launch;
use crate::scheduler::{Placement, Pool, PoolGpu};
use crate::store::Store;

/// A run in progress, as the daemon tracks it.
#[derive(Debug, Clone)]
pub(super) struct Held {
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
    pub deadline: Option<crate::daemon::run::watchdog::Deadline>,
    /// How long it is expected to run, ms (backfill).
    pub estimate: Option<i64>,
}

use crate::daemon::locks::Guard;
pub(super) use crate::daemon::locks::lock;

/// State shared by the scheduler, the run waiters and the API handlers.
///
/// Lock order: there is none to learn, because no two of these locks are
/// ever held at once, and `daemon/locks.rs` checks it on every acquisition
/// (a debug build panics naming both places). Each is taken for one short
/// step (`lock(&d.pool)`, `d.store()`) and released before the next is
/// taken; a guard is never
/// held across a plugin call, an await or a process spawn, with one
/// exception: `supervisors` is held across launching a supervisor (no other
/// lock is taken meanwhile), so a new child is known before it can be
/// mistaken for an orphan. The policy chain and its ranking are owned by
/// the scheduler thread and take no lock at all.
pub struct Daemon {
    /// The configuration in force.
    pub cfg: Config,
    /// The store (short critical sections only).
    store: Mutex<Store>,
    /// A second, read-only connection for what only reads (`ls`, `show`):
    /// a writer waiting on a busy database does not hold them up.
    reader: Mutex<Store>,
    /// What is free.
    pub(super) pool: Mutex<Pool>,
    /// The runs in progress and what they hold.
    pub(super) placed: Mutex<HashMap<i64, Held>>,
    /// GPU monitoring, when a backend reports GPUs.
    pub(super) gpu: Mutex<Option<Monitor>>,
    /// What the API may read of the policy chain (the chain itself lives on
    /// the scheduler thread).
    pub(super) chain_status: Mutex<crate::daemon::pipeline::policy_pass::ChainStatus>,
    /// Requests to the scheduler thread.
    pub(super) commands:
        Mutex<std::sync::mpsc::Sender<crate::daemon::pipeline::scheduler::Command>>,
    /// When the chain wants to look again (a deferral's `until`).
    pub(super) policy_wake: Mutex<Option<i64>>,
    /// Waiting reasons set from policy deferrals, to write only changes.
    pub(super) wait_reasons: Mutex<HashMap<i64, String>>,
    /// Why eligible tasks wait for their owner's `[quotas]`.
    pub(super) quota_reasons: Mutex<HashMap<i64, String>>,
    /// Why eligible tasks wait at placement: a stagger, a backfill reservation.
    pub(super) place_reasons: Mutex<HashMap<i64, String>>,
    /// Runtime estimates by name and project.
    pub(super) estimates: Mutex<crate::daemon::pipeline::backfill::EstimateCache>,
    /// Where per-run cgroups go, if anywhere; else why not.
    pub cgroup: Result<CgroupBase, String>,
    /// How supervisors are started.
    pub supervisor: launch::SupervisorCmd,
    /// Wakes the scheduler thread.
    pub kick: crate::daemon::pipeline::scheduler::Kick,
    /// Bumped on every change; `wait` watches it.
    pub changes: watch::Sender<u64>,
    /// Set on SIGTERM: no new runs start.
    pub draining: AtomicBool,
    /// Cores tasks may be pinned to (read once: finding them reads cgroup files).
    pub cpu_total: u32,
    /// The only way the daemon makes and deletes under its state dir.
    pub(super) state: crate::daemon::statedir::StateDir,
    /// The supervisors this daemon started and has not reaped: without
    /// cgroups, any other child of ours is an orphan of a dead one.
    pub(super) supervisors: Mutex<std::collections::HashSet<i32>>,
    /// Result validators, made on first use (`Err`: why they cannot run).
    pub(super) validators:
        std::sync::OnceLock<Result<Arc<crate::plugins::validator::Validators>, String>>,
    /// The notification thread, once it runs.
    pub(super) notify: Mutex<Option<crate::notify::worker::Handle>>,
    /// The GPUs as runs' manifests name them (set once at start).
    pub(super) gpu_facts: std::sync::OnceLock<crate::daemon::watch::gpus::GpuFacts>,
    /// Wakes the archive worker.
    pub(super) archive_wake: crate::daemon::work::archive::Wake,
    /// Why no run starts now (`[retention] min_free`), as of the last pass.
    pub(super) start_gate: Mutex<Option<String>>,
    /// CPU-only runs' RAPL counters at their start.
    pub(super) rapl_start: Mutex<HashMap<i64, crate::daemon::run::energy::RaplReading>>,
    /// Ended runs' energy the store refused, kept until their end is recorded.
    pub(super) pending_energy: Mutex<HashMap<i64, crate::gpu::energy::RunEnergy>>,
    /// Tasks looked up in the result cache since they last ran (`cache.rs`).
    pub(super) cache_looked: Mutex<std::collections::HashSet<i64>>,
    /// Who may do what (`[users]`, and whether the daemon runs as root).
    pub access: crate::access::Access,
    /// Flushes before anyone is told (`durable.rs`), and the database file's watch.
    pub(super) durability: crate::daemon::durable::Durable,
    /// Set once when the daemon halts for good (`Daemon::halt`).
    pub(super) halt_reason: std::sync::OnceLock<String>,
    /// Starts that fail (a full disk, a locked store), logged per change.
    pub(super) start_failures: crate::daemon::condition::Condition,
    /// Scheduling passes that fail, logged per change.
    pub(super) pass_failures: crate::daemon::condition::Condition,
}

impl Daemon {
    /// Builds the shared state.
    pub fn new(
        cfg: Config,
        store: Store,
        cgroup: Result<CgroupBase, String>,
        exe: PathBuf,
        gpus: Vec<PoolGpu>,
        monitor: Option<Monitor>,
        commands: std::sync::mpsc::Sender<crate::daemon::pipeline::scheduler::Command>,
    ) -> Result<Arc<Daemon>> {
        let state = crate::daemon::statedir::StateDir::open(&cfg.state_dir)?;
        let cpus = cfg.cpu_pool();
        let cpu_total = cpus.len() as u32;
        let pool = Pool {
            slots: cfg.slots,
            gpus,
            cpus,
            share: cfg.gpu.share,
            policy_closed: Default::default(),
            stagger: crate::scheduler::Stagger {
                every_ms: cfg.gpu.stagger.as_millis() as i64,
                ..Default::default()
            },
        };
        let chain_status = crate::daemon::pipeline::policy_pass::ChainStatus::default();
        let monitor = monitor.map(|mut m| {
            m.tariff = Some(cfg.tariff());
            m
        });
        let access = crate::access::Access::new(&cfg.users, crate::users::euid());
        let marks_path = crate::store::marks::marks_path(&cfg.db_path());
        let marks = crate::store::marks::MarksFile::open(&marks_path)
            .map_err(|e| anyhow::anyhow!("open {}: {e}", marks_path.display()))?;
        let durability = crate::daemon::durable::Durable::new(cfg.db_path(), marks)
            .map_err(|e| anyhow::anyhow!("look at {}: {e}", cfg.db_path().display()))?;
        let reader = Store::open_read_only(&cfg.db_path())
            .map_err(|e| anyhow::anyhow!("open {} to read: {e}", cfg.db_path().display()))?;
        Ok(Arc::new(Daemon {
            reader: Mutex::new(reader),
            durability,
            halt_reason: std::sync::OnceLock::new(),
            start_failures: crate::daemon::condition::Condition::new("cannot start tasks"),
            pass_failures: crate::daemon::condition::Condition::new("scheduling pass failed"),
            access,
            cfg,
            store: Mutex::new(store),
            pool: Mutex::new(pool),
            placed: Mutex::new(HashMap::new()),
            gpu: Mutex::new(monitor),
            chain_status: Mutex::new(chain_status),
            commands: Mutex::new(commands),
            policy_wake: Mutex::new(None),
            wait_reasons: Mutex::new(HashMap::new()),
            quota_reasons: Mutex::new(HashMap::new()),
            place_reasons: Mutex::new(HashMap::new()),
            estimates: Mutex::new(HashMap::new()),
            cgroup,
            supervisor: launch::SupervisorCmd::for_exe(&exe),
            kick: Default::default(),
            changes: watch::channel(0).0,
            draining: AtomicBool::new(false),
            cpu_total,
            state,
            supervisors: Mutex::new(Default::default()),
            validators: std::sync::OnceLock::new(),
            notify: Mutex::new(None),
            gpu_facts: std::sync::OnceLock::new(),
            archive_wake: Default::default(),
            start_gate: Mutex::new(None),
            rapl_start: Mutex::new(HashMap::new()),
            pending_energy: Mutex::new(HashMap::new()),
            cache_looked: Mutex::new(Default::default()),
        }))
    }

    /// The store's lock itself (for the notification thread).
    pub fn store_mutex(&self) -> &Mutex<Store> {
        &self.store
    }

    /// The store, locked (one of the daemon's locks: see `locks.rs`).
    #[track_caller]
    pub fn store(&self) -> Guard<'_, Store> {
        lock(&self.store)
    }

    /// The read-only connection, locked (one of the daemon's locks).
    #[track_caller]
    pub fn reader(&self) -> Guard<'_, Store> {
        lock(&self.reader)
    }

    /// Tells waiters something changed and asks for a scheduling pass.
    pub fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
        self.kick.notify();
        self.archive_wake.wake();
        if let Some(h) = lock(&self.notify).as_ref() {
            h.wake();
        }
    }
}
