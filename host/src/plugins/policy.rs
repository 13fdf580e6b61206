//! A scheduling-policy plugin: one live instance in its own store, called
//! under a deadline and a memory cap, with no filesystem, network,
//! environment or real clock, and its answers validated by the caller.

use wasmtime::Store;
use wasmtime::component::ResourceTable;

use super::engine::PluginEngine;
use super::incremental::Kind;
use super::limits::{
    MAX_CALL_TRANSFER, MAX_HOST_RESOURCES, MAX_LOG_MESSAGE, MAX_REASON, TotalLimiter,
    answer_transfer, capped,
};
use super::pass::Pass;
use super::sink::{LogBudget, LogSink};
use super::version::{Adapter, Detected};
use super::versioned::{Live, Pre};
use super::wasi::SeededRng;

pub use super::model::{
    ClosedGpu, ConfigError, Deferral, Evaluation, Gpu, Preemption, Priority, QueuedTask, Resources,
    RunningTask, Snapshot, TaskVerdict, Usage, UsageTable, Verdict,
};

pub use super::error::PluginError;
pub(super) use super::error::classify;
pub use super::limits::PluginLimits;
pub use super::seed::seed_of;
pub use super::state::PluginState;

/// A loaded scheduling policy, of any version the host loads.
pub struct PolicyPlugin {
    /// The name it is known by.
    pub name: String,
    /// sha256 of its component, for `plugins ls`.
    pub sha256: String,
    /// The version of the contract it implements.
    pub version: Detected,
    engine: PluginEngine,
    pre: Pre,
    limits: PluginLimits,
    config: String,
    sink: LogSink,
    rng: SeededRng,
    log_budget: LogBudget,
    live: Option<(Store<PluginState>, Live)>,
    /// What the live instance holds, for an incremental plugin: the
    /// snapshot the next pass is sent as a change from. None with no
    /// instance, and after any failed call.
    held: Option<std::sync::Arc<super::incremental::Held>>,
}

impl PolicyPlugin {
    /// Compiles (or loads from the cache) `wasm`, finds which version of the
    /// contract it implements, checks it against that version's
    /// scheduling-policy world, instantiates it and runs `configure(config)`.
    pub fn load(
        engine: &PluginEngine,
        name: &str,
        wasm: &[u8],
        config: &str,
        limits: PluginLimits,
    ) -> Result<PolicyPlugin, PluginError> {
        let component = engine.component(wasm)?;
        let version = super::version::detect(&engine.engine, &component, wasm)?;
        if let Some(note) = version.note() {
            tracing::warn!(plugin = %name, "{note}");
        }
        let pre = Pre::new(&engine.engine, &component, version.adapter())?;
        let sha256 = super::sha256(wasm);
        let mut p = PolicyPlugin {
            name: name.to_string(),
            sha256,
            version,
            engine: engine.clone(),
            pre,
            log_budget: LogBudget::new(name, limits.log_bytes_per_minute),
            limits,
            config: config.to_string(),
            sink: LogSink::default(),
            rng: SeededRng::default(),
            live: None,
            held: None,
        };
        p.instantiate()?;
        Ok(p)
    }

    fn new_store(&self) -> Store<PluginState> {
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HOST_RESOURCES);
        let state = PluginState {
            name: self.name.clone(),
            wasi: super::wasi::context(&self.sink, &self.rng),
            table,
            limits: TotalLimiter::new(self.limits.memory),
            log_lines: self.limits.log_lines,
            log_budget: self.log_budget.clone(),
            rng: self.rng.clone(),
            http: None,
            mail: None,
            tariff: None,
            tariff_spans: Default::default(),
        };
        let mut store = Store::new(&self.engine.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_hostcall_fuel(MAX_CALL_TRANSFER);
        store
    }

    /// A fresh instance, configured. The old one (if any) is dropped first.
    pub fn instantiate(&mut self) -> Result<(), PluginError> {
        self.live = None;
        self.held = None;
        let mut store = self.new_store();
        self.rng.seed(0);
        store.set_epoch_deadline(PluginEngine::ticks(self.limits.configure_timeout));
        let timeout = self.limits.configure_timeout;
        let memory = self.limits.memory;
        let (pre, config, engine) = (&self.pre, &self.config, &self.engine);
        let result = engine.with_deadline(|| {
            let live = pre.instantiate(&mut store)?;
            let r = live.configure(&mut store, config)?;
            Ok::<_, wasmtime::Error>((live, r))
        });
        self.flush_output();
        match result {
            Ok((live, Ok(()))) => {
                self.live = Some((store, live));
                Ok(())
            }
            Ok((_, Err(e))) => Err(PluginError::Config {
                key: e.key.map(|k| capped(&k, MAX_LOG_MESSAGE)),
                message: capped(&e.message, MAX_REASON),
            }),
            Err(e) => Err(classify(e, timeout, memory)),
        }
    }

    /// Makes the pass's form for this plugin's version (or its change from
    /// what it holds), once per pass for every plugin that needs the same
    /// one, before any plugin's deadline starts.
    pub fn prepare(&self, pass: &Pass) {
        // No plugin can make the host's side of a call panic: tests stand
        // one in for a bug there, by the plugin's config.
        #[cfg(test)]
        if self.config.contains("host-panics-in-prepare") {
            panic!("the host's side of a call panics (a test's stand-in for a bug)");
        }
        match self.version.adapter() {
            Adapter::V0_1 => {
                let _ = pass.v0_1();
            }
            Adapter::V0_2 => {
                let _ = pass.v0_2();
            }
            Adapter::Incremental => {
                let _ = pass.change(self.held.as_ref(), Kind::Incremental);
            }
            Adapter::Delta => {
                let _ = pass.change(self.held.as_ref(), Kind::Delta);
            }
        }
    }

    /// Evaluates one pass: the answer in the host's model, checked against
    /// the snapshot (an answer that breaks the contract is
    /// [`PluginError::Invalid`]). A failed call drops the instance; the next
    /// call starts a fresh one.
    pub fn evaluate(&mut self, pass: &Pass) -> Result<Evaluation, PluginError> {
        if self.live.is_none() {
            self.instantiate()?;
        }
        self.prepare(pass);
        let timeout = self.limits.evaluate_timeout;
        let memory = self.limits.memory;
        let budget = self.limits.log_lines;
        let engine = self.engine.clone();
        let Some((store, live)) = self.live.as_mut() else {
            return Err(PluginError::Trap("no instance".into()));
        };
        store.data_mut().log_lines = budget;
        // The `tariff` import answers from this pass's tariff.
        store.data_mut().tariff = pass.tariff();
        // Every source of randomness restarts from the snapshot's seed, made
        // (once per pass) if the plugin draws. The store's WASI context is
        // the one made with it: its streams draw from `rng` (shared), so it
        // is not made again for each call.
        self.rng.seed_lazily(pass.seed_source());
        store.set_epoch_deadline(PluginEngine::ticks(timeout));
        // What a valid answer can hold is all the answer may copy to the host.
        store.set_hostcall_fuel(answer_transfer(pass.items()));
        let held = &mut self.held;
        let result = engine.with_deadline(|| live.evaluate(&mut *store, pass, held));
        store.set_hostcall_fuel(MAX_CALL_TRANSFER);
        self.flush_output();
        match result {
            Ok(answer) => answer,
            Err(e) => {
                self.live = None;
                self.held = None;
                Err(classify(e, timeout, memory))
            }
        }
    }

    /// What the live instance holds, for the benchmark that prepares a
    /// pass's change before timing the call.
    #[doc(hidden)]
    pub fn held_for_bench(&self) -> Option<&std::sync::Arc<super::incremental::Held>> {
        self.held.as_ref()
    }

    /// What the live instance holds (an incremental plugin's last confirmed
    /// snapshot), for tests.
    #[cfg(test)]
    pub(crate) fn held(&self) -> Option<&std::sync::Arc<super::incremental::Held>> {
        self.held.as_ref()
    }

    /// Makes the host believe the instance holds `held`, for tests of a
    /// plugin that does not.
    #[cfg(test)]
    pub(crate) fn forge_held(&mut self, held: std::sync::Arc<super::incremental::Held>) {
        self.held = Some(held);
    }

    /// Writes what the guest printed to the daemon's log, within its budget.
    fn flush_output(&self) {
        self.sink.to_log(&self.name, &self.log_budget, &[]);
    }
}
