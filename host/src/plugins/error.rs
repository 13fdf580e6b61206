//! Why a plugin call failed, whatever the plugin's kind: the causes, and
//! a wasmtime error read as one of them.

use std::time::Duration;

use wasmtime::Trap;

use super::limits::OverMemory;
use super::wasi::Blocked;

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
