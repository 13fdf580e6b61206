//! The daemon's shared state: what its jobs (the pipeline, runs, watches,
//! work) share, and the locks they take it through.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use tokio::sync::watch;

use crate::config::Config;
use crate::daemon::given::Clock;
use crate::daemon::run::executor::Executor;
use crate::sandbox::cgroup::CgroupBase;

use crate::scheduler::Pool;
use crate::store::Store;

use crate::daemon::locks::Guard;
pub(super) use crate::daemon::locks::lock;

/// The daemon: what every job shares (the config, the store, the pool of
/// slots and GPUs, the change feed, access rules, durability), and one part
/// per job (`pipeline`, `runs`, `watch`, `work`), each defined in its
/// folder. A part's fields that only its folder uses are private to it (the
/// compiler keeps other jobs out); those another job reads are
/// `pub(in crate::daemon)`.
///
/// Lock order: there is none to learn, because no two of these locks are
/// ever held at once, and `daemon/locks.rs` checks it on every acquisition
/// (a debug build panics naming both places). Each is taken for one short
/// step (`lock(&d.pool)`, `d.store()`) and released before the next is
/// taken; a guard is never held across a plugin call, an await or a
/// process spawn, with one exception: the local executor's set of live
/// supervisors (`run/local.rs`) is held across launching one (no other
/// lock is taken meanwhile), so a new child is known before it can be
/// mistaken for an orphan. The policy
/// chain and its ranking are owned by the scheduler thread and take no
/// lock at all.
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
    /// Who may do what (`[users]`, and whether the daemon runs as root).
    pub access: crate::access::Access,
    /// Flushes before anyone is told (`durable.rs`), and the database file's watch.
    pub(super) durability: crate::daemon::durable::Durable,
    /// Set once when the daemon halts for good (`Daemon::halt`).
    pub(super) halt_reason: std::sync::OnceLock<String>,
    /// Wall time for passes, claims and starts (given: `given.rs`).
    clock: Arc<dyn Clock>,
    /// The scheduling pipeline's part (the scheduler thread's).
    pub(super) pipeline: super::pipeline::Parts,
    /// The runs' part: what is placed, the executor, what ends need.
    pub(super) runs: super::run::Parts,
    /// What is watched: the GPUs.
    pub(super) watch: super::watch::Parts,
    /// The workers' wake-ups.
    pub(super) work: super::work::Parts,
    /// What `/metrics` counts as it happens (runs ended, passes, plugin calls).
    pub metrics: crate::metrics::Metrics,
}

impl Daemon {
    /// Builds the shared state.
    pub fn new(
        cfg: Config,
        store: Store,
        cgroup: Result<CgroupBase, String>,
        gpus: crate::daemon::watch::gpus::GpuSetup,
        commands: std::sync::mpsc::Sender<crate::daemon::pipeline::scheduler::Command>,
        clock: Arc<dyn Clock>,
        executor: Arc<dyn Executor>,
    ) -> Result<Arc<Daemon>> {
        let crate::daemon::watch::gpus::GpuSetup {
            pool: gpus,
            monitor,
            facts,
            ..
        } = gpus;
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
            access,
            cfg,
            store: Mutex::new(store),
            pool: Mutex::new(pool),
            kick: Default::default(),
            changes: watch::channel(0).0,
            draining: AtomicBool::new(false),
            cpu_total,
            state,
            pipeline: crate::daemon::pipeline::Parts::new(commands),
            runs: crate::daemon::run::Parts::new(cgroup, executor),
            watch: crate::daemon::watch::Parts::new(monitor, facts),
            clock,
            work: crate::daemon::work::Parts::default(),
            metrics: crate::metrics::Metrics::default(),
        }))
    }

    /// Now (Unix ms) on the daemon's clock: the system's, or the one it
    /// was given.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
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
        self.work.wake();
    }
}
