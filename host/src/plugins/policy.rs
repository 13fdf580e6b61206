//! A scheduling-policy plugin: one live instance in its own store, called
//! under a deadline and a memory cap, with no filesystem, network,
//! environment or real clock, and its answers validated by the caller.

use std::time::Duration;

use wasmtime::component::ResourceTable;
use wasmtime::{Store, Trap};

use super::engine::PluginEngine;
use super::incremental::Kind;
use super::limits::{
    MAX_CALL_TRANSFER, MAX_HOST_RESOURCES, MAX_LOG_MESSAGE, MAX_REASON, OverMemory, TotalLimiter,
    answer_transfer, capped,
};
use super::pass::Pass;
use super::sink::{LogBudget, LogSink};
use super::version::{Adapter, Detected};
use super::versioned::{Live, Pre};
use super::wasi::{Blocked, SeededRng};

pub use super::model::{
    ClosedGpu, ConfigError, Deferral, Evaluation, Gpu, Preemption, Priority, QueuedTask, Resources,
    RunningTask, Snapshot, TaskVerdict, Usage, Verdict,
};

pub use super::limits::PluginLimits;
pub use super::state::PluginState;

/// Why a plugin call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// Not a valid component.
    #[error("not a valid component: {0}")]
    Compile(String),
    /// A compile that ran out of what it may take (`[plugins]
    /// compile_memory`, the compile deadline) or could not run at all.
    #[error("cannot be compiled: {0}")]
    CompileLimit(String),
    /// A component, but not a scheduling policy this host can link.
    #[error("does not implement the scheduling-policy world: {0}")]
    World(String),
    /// A scheduling policy of a version of the contract this host does not load.
    #[error(
        "implements nightjar:plugin/{found}, a version this host does not load (it loads {supported}); rebuild it with an SDK for one of those, or upgrade nightjar"
    )]
    Version {
        /// The version the component exports.
        found: String,
        /// The versions this host loads.
        supported: String,
    },
    /// The pass's snapshot cannot be written in the plugin's version.
    #[error("the snapshot cannot be sent to it: {0}")]
    Snapshot(String),
    /// Its `configure` refused its config.
    #[error("rejected its config{}: {}", .key.as_deref().map(|k| format!(" at `{k}`")).unwrap_or_default(), .message)]
    Config {
        /// The key at fault.
        key: Option<String>,
        /// What the plugin said.
        message: String,
    },
    /// The call ran past its deadline.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The plugin tried to grow its memory past the cap.
    #[error("exceeded its memory limit of {0} bytes (all memories and tables together)")]
    Memory(usize),
    /// The plugin called an import that would block.
    #[error("{0}")]
    Blocked(String),
    /// The call did not come back within the watchdog's time (stuck in the
    /// host); it was abandoned.
    #[error("did not return within {0:?} and was abandoned")]
    Stuck(Duration),

    /// The plugin trapped (panic, unreachable, stack overflow, ...).
    #[error("trapped: {0}")]
    Trap(String),
    /// The answer broke the contract (unknown ids, GPUs, sizes).
    #[error("invalid answer: {0}")]
    Invalid(String),
    /// A component, but not a result validator this host can link.
    #[error("is not a result validator: {0}")]
    NotValidator(String),
}

impl PluginError {
    /// A short cause for events and `plugins ls`.
    pub fn cause(&self) -> &'static str {
        match self {
            PluginError::Compile(_) | PluginError::CompileLimit(_) => "compile",
            PluginError::World(_) => "world",
            PluginError::Version { .. } => "version",
            PluginError::Snapshot(_) => "snapshot",
            PluginError::Config { .. } => "config",
            PluginError::Timeout(_) => "timeout",
            PluginError::Memory(_) => "memory",
            PluginError::Blocked(_) => "blocking-call",
            PluginError::Stuck(_) => "stuck",
            PluginError::Trap(_) => "trap",
            PluginError::Invalid(_) => "invalid-answer",
            PluginError::NotValidator(_) => "world",
        }
    }
}

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

    /// Evaluates one pass: the answer in the host's model, checked against
    /// the snapshot (an answer that breaks the contract is
    /// [`PluginError::Invalid`]). A failed call drops the instance; the next
    /// call starts a fresh one.
    pub fn evaluate(&mut self, pass: &Pass) -> Result<Evaluation, PluginError> {
        if self.live.is_none() {
            self.instantiate()?;
        }
        // The pass's form for this version is made once per pass, before
        // this plugin's deadline starts.
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

/// The random seed for `snapshot`: a hash of what the policy sees, so the
/// same snapshot always gives the same random bytes. Made once per pass; a
/// fast mix (FxHash's) over the fields, as it is a seed, not a table key.
pub fn seed_of(s: &Snapshot) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = Mix::default();
    (s.now, &s.time_zone, s.utc_offset).hash(&mut h);
    // Four independent lanes over the queue: the mixes of one task wait on
    // each other, those of four tasks do not.
    let mut lanes = [Mix(1), Mix(2), Mix(3), Mix(4)];
    for (i, t) in s.queue.iter().enumerate() {
        (t.id, t.submitted_at, t.eligible_at, t.attempts, &t.project).hash(&mut lanes[i % 4]);
    }
    for lane in lanes {
        h.add(lane.0);
    }
    for t in &s.running {
        (t.id, t.started_at, &t.gpus).hash(&mut h);
    }
    for g in &s.gpus {
        (
            g.index,
            g.mem_used,
            g.mem_reserved,
            g.util,
            g.temperature,
            g.healthy,
        )
            .hash(&mut h);
    }
    s.usage.len().hash(&mut h);
    h.finish()
}

/// FxHash's word mix: a word at a time, deterministic across runs.
#[derive(Default, Clone, Copy)]
struct Mix(u64);

impl Mix {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.add(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_i32(&mut self, n: i32) {
        self.add(n as u64);
    }

    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// Turns a wasmtime error into a cause.
pub(super) fn classify(e: wasmtime::Error, timeout: Duration, memory: usize) -> PluginError {
    if e.downcast_ref::<OverMemory>().is_some() {
        return PluginError::Memory(memory);
    }
    if let Some(b) = e.downcast_ref::<Blocked>() {
        return PluginError::Blocked(b.to_string());
    }
    if let Some(trap) = e.downcast_ref::<Trap>() {
        return match trap {
            Trap::Interrupt => PluginError::Timeout(timeout),
            other => PluginError::Trap(format!("{other}")),
        };
    }
    let text = format!("{e:#}");
    if text.contains("fuel allocated for hostcalls has been exhausted") {
        return PluginError::Invalid(
            "handed the host more data in one call than it accepts (a reason over 4096 bytes, more items than the snapshot has, or over 1 MiB to an import or from configure)".into(),
        );
    }
    if text.contains("memory minimum size") || text.contains("count too high") {
        return PluginError::Memory(memory);
    }
    PluginError::Trap(text)
}
