//! A scheduling-policy plugin: one live instance in its own store, called
//! under a deadline and a memory cap, with no filesystem, network,
//! environment or real clock, and its answers validated by the caller.

use std::time::Duration;

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder, Trap};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::engine::PluginEngine;
use super::sink::LogSink;

wasmtime::component::bindgen!({
    path: "../wit",
    world: "scheduling-policy",
    additional_derives: [serde::Serialize, serde::Deserialize],
});

pub use exports::nightjar::plugin::policy::{
    ClosedGpu, Deferral, Evaluation, Gpu, Preemption, QueuedTask, RunningTask, Snapshot,
    TaskVerdict, Usage, Verdict,
};
pub use nightjar::plugin::types::{ConfigError, Level, Priority, Resources};

/// Limits every call runs under.
#[derive(Debug, Clone)]
pub struct PluginLimits {
    /// Deadline of one `evaluate`.
    pub evaluate_timeout: Duration,
    /// Deadline of one `configure`.
    pub configure_timeout: Duration,
    /// Linear memory a plugin may grow to.
    pub memory: usize,
    /// Log lines a plugin may write per call.
    pub log_lines: u32,
}

impl Default for PluginLimits {
    fn default() -> Self {
        PluginLimits {
            evaluate_timeout: Duration::from_millis(100),
            configure_timeout: Duration::from_secs(1),
            memory: 64 << 20,
            log_lines: 100,
        }
    }
}

/// Why a plugin call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// Not a valid component.
    #[error("not a valid component: {0}")]
    Compile(String),
    /// A component, but not of the scheduling-policy world.
    #[error("does not implement world scheduling-policy of nightjar:plugin@0.1.0: {0}")]
    World(String),
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
    #[error("exceeded its memory limit of {0} bytes")]
    Memory(usize),
    /// The plugin trapped (panic, unreachable, stack overflow, ...).
    #[error("trapped: {0}")]
    Trap(String),
    /// The answer broke the contract (unknown ids, GPUs, sizes).
    #[error("invalid answer: {0}")]
    Invalid(String),
}

impl PluginError {
    /// A short cause for events and `plugins ls`.
    pub fn cause(&self) -> &'static str {
        match self {
            PluginError::Compile(_) => "compile",
            PluginError::World(_) => "world",
            PluginError::Config { .. } => "config",
            PluginError::Timeout(_) => "timeout",
            PluginError::Memory(_) => "memory",
            PluginError::Trap(_) => "trap",
            PluginError::Invalid(_) => "invalid-answer",
        }
    }
}

/// What a plugin's store holds.
pub struct PluginState {
    name: String,
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    log_budget: u32,
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl nightjar::plugin::types::Host for PluginState {}

impl nightjar::plugin::host::Host for PluginState {
    fn log(&mut self, level: Level, message: String) {
        if self.log_budget == 0 {
            return;
        }
        self.log_budget -= 1;
        let message: String = message.chars().take(1024).collect();
        let name = &self.name;
        match level {
            Level::Trace | Level::Debug => tracing::debug!(plugin = %name, "{message}"),
            Level::Info => tracing::info!(plugin = %name, "{message}"),
            Level::Warn => tracing::warn!(plugin = %name, "{message}"),
            Level::Error => tracing::error!(plugin = %name, "{message}"),
        }
    }

    fn plugin_name(&mut self) -> String {
        self.name.clone()
    }
}

/// A wall clock stuck at the epoch: policies read time from the snapshot only.
struct FrozenWall;
impl wasmtime_wasi::HostWallClock for FrozenWall {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

/// A monotonic clock that never moves.
struct FrozenMono;
impl wasmtime_wasi::HostMonotonicClock for FrozenMono {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

/// A loaded scheduling policy.
pub struct PolicyPlugin {
    /// The name it is known by.
    pub name: String,
    /// sha256 of its component, for `plugins ls`.
    pub sha256: String,
    engine: PluginEngine,
    pre: SchedulingPolicyPre<PluginState>,
    limits: PluginLimits,
    config: String,
    sink: LogSink,
    live: Option<(Store<PluginState>, SchedulingPolicy)>,
}

impl PolicyPlugin {
    /// Compiles (or loads from the cache) `wasm`, checks it against the
    /// scheduling-policy world, instantiates it and runs `configure(config)`.
    pub fn load(
        engine: &PluginEngine,
        name: &str,
        wasm: &[u8],
        config: &str,
        limits: PluginLimits,
    ) -> Result<PolicyPlugin, PluginError> {
        let component = engine
            .component(wasm)
            .map_err(|e| PluginError::Compile(format!("{e:#}")))?;
        let mut linker: Linker<PluginState> = Linker::new(&engine.engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| PluginError::World(format!("{e:?}")))?;
        SchedulingPolicy::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(|e| PluginError::World(format!("{e:?}")))?;
        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| PluginError::World(format!("{e:#}")))?;
        let pre = SchedulingPolicyPre::new(instance_pre)
            .map_err(|e| PluginError::World(format!("{e:#}")))?;
        let sha256 = {
            use sha2::Digest;
            sha2::Sha256::digest(wasm)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let mut p = PolicyPlugin {
            name: name.to_string(),
            sha256,
            engine: engine.clone(),
            pre,
            limits,
            config: config.to_string(),
            sink: LogSink::default(),
            live: None,
        };
        p.instantiate()?;
        Ok(p)
    }

    fn new_store(&self) -> Store<PluginState> {
        let wasi = WasiCtxBuilder::new()
            .stdout(self.sink.clone())
            .stderr(self.sink.clone())
            .wall_clock(FrozenWall)
            .monotonic_clock(FrozenMono)
            .build();
        let state = PluginState {
            name: self.name.clone(),
            wasi,
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(self.limits.memory)
                .instances(16)
                .tables(16)
                .table_elements(100_000)
                .trap_on_grow_failure(true)
                .build(),
            log_budget: self.limits.log_lines,
        };
        let mut store = Store::new(&self.engine.engine, state);
        store.limiter(|s| &mut s.limits);
        store
    }

    /// A fresh instance, configured. The old one (if any) is dropped first.
    pub fn instantiate(&mut self) -> Result<(), PluginError> {
        self.live = None;
        let mut store = self.new_store();
        store.set_epoch_deadline(PluginEngine::ticks(self.limits.configure_timeout));
        let timeout = self.limits.configure_timeout;
        let memory = self.limits.memory;
        let (pre, config, engine) = (self.pre.clone(), self.config.clone(), self.engine.clone());
        let result = engine.with_deadline(|| {
            let bindings = pre.instantiate(&mut store)?;
            let r = bindings
                .nightjar_plugin_policy()
                .call_configure(&mut store, &config)?;
            Ok::<_, wasmtime::Error>((bindings, r))
        });
        self.flush_output();
        match result {
            Ok((bindings, Ok(()))) => {
                self.live = Some((store, bindings));
                Ok(())
            }
            Ok((_, Err(e))) => Err(PluginError::Config {
                key: e.key,
                message: e.message,
            }),
            Err(e) => Err(classify(e, timeout, memory)),
        }
    }

    /// Evaluates one snapshot. A failure drops the instance; the next call
    /// starts a fresh one.
    pub fn evaluate(&mut self, snapshot: &Snapshot) -> Result<Evaluation, PluginError> {
        if self.live.is_none() {
            self.instantiate()?;
        }
        let timeout = self.limits.evaluate_timeout;
        let memory = self.limits.memory;
        let budget = self.limits.log_lines;
        let engine = self.engine.clone();
        let Some((store, bindings)) = self.live.as_mut() else {
            return Err(PluginError::Trap("no instance".into()));
        };
        store.data_mut().log_budget = budget;
        store.set_epoch_deadline(PluginEngine::ticks(timeout));
        let result = engine.with_deadline(|| {
            bindings
                .nightjar_plugin_policy()
                .call_evaluate(&mut *store, snapshot)
        });
        self.flush_output();
        match result {
            Ok(e) => Ok(e),
            Err(e) => {
                self.live = None;
                Err(classify(e, timeout, memory))
            }
        }
    }

    /// Writes what the guest printed to the daemon's log.
    fn flush_output(&self) {
        let out = self.sink.drain();
        if !out.is_empty() {
            let text = String::from_utf8_lossy(&out);
            for line in text.lines().take(50) {
                tracing::info!(plugin = %self.name, "{line}");
            }
        }
    }
}

/// Evaluates one snapshot with several policies at once, one thread each
/// (each plugin has its own store); results come back in the same order.
pub fn evaluate_all(
    plugins: &mut [&mut PolicyPlugin],
    snapshot: &Snapshot,
) -> Vec<Result<Evaluation, PluginError>> {
    if plugins.len() <= 1 {
        return plugins.iter_mut().map(|p| p.evaluate(snapshot)).collect();
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = plugins
            .iter_mut()
            .map(|p| scope.spawn(move || p.evaluate(snapshot)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(PluginError::Trap("the evaluating thread panicked".into()))
                })
            })
            .collect()
    })
}

/// Turns a wasmtime error into a cause.
fn classify(e: wasmtime::Error, timeout: Duration, memory: usize) -> PluginError {
    if let Some(trap) = e.downcast_ref::<Trap>() {
        return match trap {
            Trap::Interrupt => PluginError::Timeout(timeout),
            other => PluginError::Trap(format!("{other}")),
        };
    }
    let text = format!("{e:#}");
    if text.contains("forcing trap when growing memory") || text.contains("memory minimum size") {
        return PluginError::Memory(memory);
    }
    PluginError::Trap(text)
}
