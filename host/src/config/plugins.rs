//! `[plugins]` (the policy chain and the limits every plugin runs under) and
//! `[plugin.NAME]` (one plugin's settings).

use crate::plugins::limits;
use std::path::PathBuf;
use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;

/// The policy chain and the limits every plugin runs under.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginsConfig {
    /// Folder scanned for `NAME.wasm`; empty means `<state_dir>/plugins`.
    pub dir: PathBuf,
    /// Scheduling policies, in order. A name is `<dir>/NAME.wasm` if that
    /// file exists, else a built-in. Default: `["priority"]`. Empty: the
    /// built-in order (priority, then submit time) with no plugin at all.
    pub chain: Vec<String>,
    /// Deadline of one `evaluate` call.
    #[serde(with = "humantime_serde_compat")]
    pub evaluate_timeout: Duration,
    /// Memory a plugin may hold in all: every linear memory and table together.
    pub memory_limit: ByteSize,
    /// A plugin is disabled (until reloaded) when this many of its last
    /// `failure_window` calls failed.
    pub max_failures: u32,
    /// How many recent calls `max_failures` counts over.
    pub failure_window: u32,
    /// CPU a plugin may spend per minute; more counts as a failure.
    #[serde(with = "humantime_serde_compat")]
    pub cpu_budget: Duration,
    /// Passes a plugin asks for (deferral `until`, closed GPUs) run at most this often.
    #[serde(with = "humantime_serde_compat")]
    pub min_pass_interval: Duration,
    /// A task runs at least this long after it starts before a policy may preempt it,
    /// and is preempted at most once per this time.
    #[serde(with = "humantime_serde_compat")]
    pub preempt_min_runtime: Duration,
    /// Bytes a plugin may write to the daemon's log per minute; the excess is counted.
    pub log_budget: ByteSize,
    /// Largest plugin file read at all; larger ones are refused before reading.
    pub max_file_size: ByteSize,
    /// Memory (heap and stacks) one compile may take; the daemon compiles
    /// in a child process of its own under this bound.
    pub compile_memory: ByteSize,
    /// Most queued tasks a snapshot carries (the first in the host's order).
    pub max_queue: usize,
    /// Policies whose deferrals urgent tasks bypass (e.g. `["offpeak-tariff"]`).
    pub urgent_bypass: Vec<String>,
    /// How far back the snapshot's usage (runs per project) reaches.
    #[serde(with = "humantime_serde_compat")]
    pub usage_window: Duration,
}

impl PluginsConfig {
    /// The limits every plugin runs under, as these settings give them (the
    /// daemon's chain, its validators and notifiers, and `plugins check`).
    pub fn limits(&self) -> limits::PluginLimits {
        limits::PluginLimits {
            evaluate_timeout: self.evaluate_timeout,
            memory: self.memory_limit.as_u64() as usize,
            log_bytes_per_minute: self.log_budget.as_u64() as usize,
            max_file_size: self.max_file_size.as_u64(),
            ..limits::PluginLimits::default()
        }
    }
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            dir: PathBuf::new(),
            // The defaults show the product: the first-party priority policy,
            // so `why` shows each start's score.
            chain: vec!["priority".to_string()],
            evaluate_timeout: limits::DEFAULT_EVALUATE_TIMEOUT,
            memory_limit: ByteSize::b(limits::DEFAULT_MEMORY),
            max_failures: 3,
            failure_window: 10,
            cpu_budget: Duration::from_secs(6),
            min_pass_interval: Duration::from_secs(1),
            preempt_min_runtime: Duration::from_secs(600),
            log_budget: ByteSize::b(limits::DEFAULT_LOG_BYTES_PER_MINUTE),
            max_file_size: ByteSize::b(limits::DEFAULT_MAX_FILE_SIZE),
            compile_memory: ByteSize::gib(2),
            max_queue: 10_000,
            urgent_bypass: Vec::new(),
            usage_window: Duration::from_secs(7 * 86_400),
        }
    }
}

/// One plugin's settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginEntry {
    /// What happens while the plugin fails or is disabled.
    pub on_failure: OnFailure,
    /// The plugin's own configuration, handed to its `configure` as TOML.
    pub config: toml::Table,
}

/// What a failing plugin means for scheduling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Ignore it: schedule as if it were not in the chain.
    #[default]
    Open,
    /// Start nothing until it answers again.
    Closed,
}
