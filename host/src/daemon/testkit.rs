//! The in-process tier's daemon (tests only): a real state dir and SQLite
//! file, the daemon's own pass and policy chain, a simulated clock that
//! moves only when the test moves it, and an executor that records what it
//! is handed instead of starting processes. A test decides when and how
//! each run ends ([`Fixture::end`]), so behaviour that waits on time (a
//! backoff, a quota, a schedule) is tested in milliseconds and never
//! depends on how busy the machine is. `api/inproc/` puts the typed
//! `Api::call` on top; `given_tests.rs` drives the daemon directly.

use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::boot::prepare::prepare_state_dir;
use super::given::Clock;
use super::pipeline::chain::Chain;
use super::pipeline::dispatch::Ranking;
use super::run::executor::{Executor, Launch, Started, Stop, TryLater};
use super::state::Daemon;
use super::watch::gpus;
use crate::config::Config;
use crate::store::{RunClass, Store};
use crate::sync::LockUnpoisoned;

/// 2026-11-02T00:00:00Z: a month before anything the real clock says, so
/// a test that reads the real clock somewhere shows it.
pub(crate) const T0: i64 = 1_793_577_600_000;

/// A clock that moves only when the test moves it.
pub(crate) struct SimClock(AtomicI64);

impl SimClock {
    /// Sets the time, Unix ms.
    pub(crate) fn set(&self, at: i64) {
        self.0.store(at, Ordering::SeqCst);
    }

    /// Moves the time on by `ms`.
    pub(crate) fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// What a recording executor was handed: (run, its argv joined, when).
pub(crate) type Handed = Vec<(i64, String, i64)>;

/// An executor that starts nothing: it records each launch and gives it a
/// made-up session id (900000, 900001, ...).
#[derive(Default)]
pub(crate) struct Recorder {
    handed: Mutex<Handed>,
    next_session: AtomicU32,
    /// Refuse this many launches first (as a cluster that is down would).
    pub(crate) refuse: AtomicU32,
    /// What it was asked to stop: (run, session, how).
    pub(crate) stopped: Mutex<Vec<(i64, u32, Stop)>>,
    /// Hold each launch for `flush`, as a batch system's executor does.
    pub(crate) hold: std::sync::atomic::AtomicBool,
    /// The launches held: (run, its argv joined, when, its `started`).
    held: Mutex<Vec<(i64, String, i64, Started)>>,
    /// Give back this many held launches at `flush` first, as a batch
    /// system that did not answer (a [`TryLater`]).
    pub(crate) later: AtomicU32,
    /// Leave the held launches at the daemon's `flush`, for the test's
    /// [`Recorder::flush_now`] (a batch system's submission still in
    /// flight meanwhile).
    pub(crate) defer: std::sync::atomic::AtomicBool,
    /// Called once when the daemon next asks whether launches are held:
    /// in `start`, between a run's claim and its hold in memory (a test's
    /// way into that window).
    #[allow(clippy::type_complexity)]
    pub(crate) on_holds: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Executor for Recorder {
    fn launch(&self, _: &Arc<Daemon>, run: Launch, started: Started) -> anyhow::Result<()> {
        let argv = run.spec.argv.join(" ");
        if self
            .refuse
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            anyhow::bail!("no session for `{argv}`: refused by the test");
        }
        if self.hold.load(Ordering::SeqCst) {
            self.held
                .lock_unpoisoned()
                .push((run.run, argv, run.started_at, started));
            return Ok(());
        }
        self.handed
            .lock_unpoisoned()
            .push((run.run, argv, run.started_at));
        started(
            900_000 + self.next_session.fetch_add(1, Ordering::SeqCst),
            None,
        );
        Ok(())
    }

    fn holds(&self) -> bool {
        let hook = self.on_holds.lock_unpoisoned().take();
        if let Some(hook) = hook {
            hook();
        }
        self.hold.load(Ordering::SeqCst)
    }

    fn flush(&self, daemon: &Arc<Daemon>) {
        if !self.defer.load(Ordering::SeqCst) {
            self.flush_held(daemon);
        }
    }

    fn stop(&self, run: i64, session: u32, _: &std::path::Path, how: Stop) {
        self.stopped.lock_unpoisoned().push((run, session, how));
    }

    fn sessions(&self) -> Vec<i32> {
        Vec::new()
    }
}

impl Recorder {
    /// The deferred flush: what `flush` would have done, now.
    pub(crate) fn flush_now(&self, daemon: &Arc<Daemon>) {
        self.flush_held(daemon);
    }

    fn flush_held(&self, daemon: &Arc<Daemon>) {
        let held = std::mem::take(&mut *self.held.lock_unpoisoned());
        if !held.is_empty() {
            assert!(daemon.durable(), "the round's claims are on disk");
        }
        for (run, argv, at, started) in held {
            if self
                .later
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                let why = TryLater(format!("`{argv}` not taken: given back by the test"));
                daemon.launch_failed(run, anyhow::Error::new(why));
                continue;
            }
            self.handed.lock_unpoisoned().push((run, argv, at));
            started(
                900_000 + self.next_session.fetch_add(1, Ordering::SeqCst),
                None,
            );
        }
    }
}

/// One in-process daemon and what the test holds of it.
pub(crate) struct Fixture {
    dir: tempfile::TempDir,
    _lock: std::fs::File,
    _commands: std::sync::mpsc::Receiver<super::pipeline::scheduler::Command>,
    rt: tokio::runtime::Runtime,
    /// The daemon's clock.
    pub(crate) clock: Arc<SimClock>,
    /// The daemon's executor.
    pub(crate) recorder: Arc<Recorder>,
    /// The daemon.
    pub(crate) daemon: Arc<Daemon>,
    chain: Mutex<Option<Chain>>,
    ranking: Mutex<Option<Ranking>>,
    gpus: Mutex<Option<Box<dyn crate::gpu::GpuBackend>>>,
}

impl Fixture {
    /// A daemon with `slots` slots, no GPUs, the built-in order, in UTC.
    pub(crate) fn new(slots: u32) -> Fixture {
        Fixture::with_config(&format!("slots = {slots}\n"))
    }

    /// A daemon whose config file holds `extra` (a fresh state dir is put
    /// first, `timezone` is UTC unless `extra` says otherwise). A chain
    /// it names is loaded from the state dir's `plugins/`: put the files
    /// there with [`Fixture::plugin`] first, through [`Fixture::plugins_then`].
    pub(crate) fn with_config(extra: &str) -> Fixture {
        Fixture::plugins_then(&[], extra)
    }

    /// As [`Fixture::with_config`], with each `(name, wasm file)` copied to
    /// the plugin folder before the chain loads.
    pub(crate) fn plugins_then(plugins: &[(&str, &str)], extra: &str) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        let zone = if extra.contains("timezone") {
            String::new()
        } else {
            "timezone = \"UTC\"\n".to_string()
        };
        let text = format!("state_dir = \"{}\"\n{zone}{extra}\n", state.display());
        let origin = dir.path().join("nightjar.toml");
        let cfg = Config::parse(&text, &origin).expect("the test's config parses");
        let lock = prepare_state_dir(&cfg).expect("prepare the state dir");
        std::fs::create_dir_all(cfg.plugin_dir()).expect("plugin dir");
        for (name, wasm) in plugins {
            std::fs::copy(wasm, cfg.plugin_dir().join(format!("{name}.wasm")))
                .expect("copy a test plugin");
        }
        let chain = (!cfg.plugins.chain.is_empty()).then(|| {
            let engine = crate::plugins::engine::PluginEngine::new(Some(cfg.plugin_cache_dir()))
                .expect("a plugin engine");
            let chain = Chain::load(&cfg, Some(&engine));
            let problems = chain.startup_problems();
            assert!(problems.is_empty(), "the chain loads: {problems:?}");
            chain
        });
        let store = Store::open(&cfg.db_path()).expect("open the store");
        let mut setup = gpus::configured_backend(&cfg)
            .and_then(|b| gpus::setup(&cfg, b))
            .expect("the GPU backend the config names");
        let backend = setup.backend.take();
        let (tx, rx) = std::sync::mpsc::channel();
        let clock = Arc::new(SimClock(AtomicI64::new(T0)));
        let recorder = Arc::new(Recorder::default());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let daemon = Daemon::new(
            cfg,
            store,
            Err("not in this test".into()),
            setup,
            tx,
            Arc::clone(&clock) as Arc<dyn Clock>,
            Arc::clone(&recorder) as Arc<dyn Executor>,
        )
        .expect("the daemon");
        if let Some(c) = &chain {
            super::state::lock(&daemon.pipeline.chain_status).views = c.views();
        }
        let fixture = Fixture {
            dir,
            _lock: lock,
            _commands: rx,
            rt,
            clock,
            recorder,
            daemon,
            chain: Mutex::new(chain),
            ranking: Mutex::new(None),
            gpus: Mutex::new(backend),
        };
        // The first reading before anything is placed, as the daemon's start makes it.
        fixture.sample_gpus();
        fixture
    }

    /// One reading of every GPU, applied as the sampler applies it (the
    /// sampler itself does not run: a test samples when it means to).
    pub(crate) fn sample_gpus(&self) {
        if let Some(backend) = self.gpus.lock_unpoisoned().as_mut() {
            let indices: Vec<u32> = backend.inventory().iter().map(|g| g.index).collect();
            let readings = gpus::read_all(backend.as_mut(), &indices);
            self.daemon.apply_readings(readings);
        }
    }

    /// Starts the notification lanes, as the daemon's start does: one
    /// thread per configured notifier, delivering from the outbox on real
    /// time (their retries and rate limits are not on the given clock).
    pub(crate) fn start_notifications(&self) {
        self.daemon
            .start_notifications()
            .expect("the notifiers start");
    }

    /// The world's folder (the state dir is `state/` in it).
    pub(crate) fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The runtime the daemon's async work runs on.
    pub(crate) fn rt(&self) -> &tokio::runtime::Runtime {
        &self.rt
    }

    /// One scheduling pass, as the scheduler thread makes it: the chain's
    /// ranking when there is a chain, else the built-in order.
    pub(crate) fn pass(&self) {
        let _in = self.rt.enter();
        let mut chain = self.chain.lock_unpoisoned();
        let mut ranking = self.ranking.lock_unpoisoned();
        self.daemon
            .pass(chain.as_mut(), &mut ranking)
            .expect("a pass");
    }

    /// One pass that asks the chain afresh, as the scheduler's first pass
    /// after a ranking's reuse window (`dispatch::window_after`) does: what
    /// was submitted since the last pass is ranked in this one.
    pub(crate) fn fresh_pass(&self) {
        *self.ranking.lock_unpoisoned() = None;
        self.pass();
    }

    /// Every launch so far, in order.
    pub(crate) fn handed(&self) -> Handed {
        self.recorder.handed.lock_unpoisoned().clone()
    }

    /// Ends `run` now on the given clock, as its executor reports it
    /// (`class`, exit `code`); true once recorded and flushed.
    pub(crate) fn end(&self, run: i64, class: RunClass, code: i32) -> bool {
        let out = crate::store::tests::outcome(class, code, self.clock.now_ms());
        self.daemon.report_end(run, &out)
    }
}
