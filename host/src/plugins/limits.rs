//! Every limit a plugin runs under, in one place, and the resource limiter
//! that enforces the memory cap over the plugin's whole store: the sum of all
//! its linear memories and tables, not each one alone (a component may declare
//! many memories; capping each would let 24 of them take 24 times the cap).

use std::time::Duration;

use wasmtime::ResourceLimiter;

/// Longest reason string (verdict, GPU closure, preemption) a plugin may give.
pub const MAX_REASON: usize = 4096;

/// Longest single log message kept; the rest is cut.
pub const MAX_LOG_MESSAGE: usize = 1024;

/// Bytes of guest stdout/stderr kept per call.
pub const MAX_CALL_OUTPUT: usize = 8 * 1024;

/// Host-side resources (streams, pollables) a plugin may hold at once.
pub const MAX_HOST_RESOURCES: usize = 1_000;

/// Bytes of randomness one `wasi:random` call may ask for (the host makes
/// them outside the plugin's memory cap and deadline; wasmtime allows 64 MiB).
pub const MAX_RANDOM_BYTES: u64 = 64 << 10;

/// Bytes a plugin may hand the host in one call to `configure` or to a host
/// import (wasmtime's hostcall fuel; its default is 128 MiB, copied on the
/// host whatever the plugin's memory cap).
pub const MAX_CALL_TRANSFER: usize = 1 << 20;

/// Bytes an `evaluate` answer may hand the host for `items` tasks and GPUs:
/// each item's record and a reason of [`MAX_REASON`], no more. The bound
/// holds when the answer is copied out of the plugin, before it is checked:
/// reasons that all point at one string in the plugin's memory are each
/// copied, so a plugin could otherwise make the host copy 64 times its cap.
pub fn answer_transfer(items: usize) -> usize {
    items
        .saturating_mul(MAX_REASON + 256)
        .saturating_add(MAX_CALL_TRANSFER)
}

/// Instances one plugin's store may create (a component is a few).
pub const MAX_INSTANCES: usize = 32;

/// Linear memories and tables one store may create.
pub const MAX_MEMORIES: usize = 32;

/// Table elements one store may hold in all.
pub const MAX_TABLE_ELEMENTS: usize = 100_000;

/// Default deadline of one `evaluate`: the four first-party policies answer
/// a 10,000-task snapshot in a few milliseconds, so 100 ms leaves a slow
/// policy room while a stuck one delays a pass by a tenth of a second at most.
pub const DEFAULT_EVALUATE_TIMEOUT: Duration = Duration::from_millis(100);

/// Deadline of one `configure`, instantiation included: parsing a config is
/// quick; a second is generous and keeps a start-up from hanging.
pub const DEFAULT_CONFIGURE_TIMEOUT: Duration = Duration::from_secs(1);

/// Longest a compile may take before the watchdog abandons it: cranelift
/// compiles a 32 MiB component in well under a minute on a small machine.
pub const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(60);

/// Default memory cap of a plugin (all memories and tables): a 10,000-task
/// snapshot lowered into the guest takes a few MiB; 64 MiB leaves room for
/// the policy's own state while 24 misbehaving plugins stay under 2 GiB.
pub const DEFAULT_MEMORY: u64 = 64 << 20;

/// Default log lines a plugin may write per call: enough to explain a pass.
pub const DEFAULT_LOG_LINES: u32 = 100;

/// Default bytes a plugin may write to the daemon's log per minute: a
/// chatty policy cannot fill the journal (64 KiB/min is 90 MiB a day).
pub const DEFAULT_LOG_BYTES_PER_MINUTE: u64 = 64 << 10;

/// Default largest plugin file read at all: first-party policies are a few
/// hundred KiB; 32 MiB allows a big one without reading a huge file into memory.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 32 << 20;

/// Limits every call runs under.
#[derive(Debug, Clone)]
pub struct PluginLimits {
    /// Deadline of one `evaluate`.
    pub evaluate_timeout: Duration,
    /// Deadline of one `configure` (instantiation included).
    pub configure_timeout: Duration,
    /// Longest a compile may take before the watchdog abandons it.
    pub compile_timeout: Duration,
    /// Memory a plugin may hold in all: every linear memory and table together.
    pub memory: usize,
    /// Log lines a plugin may write per call.
    pub log_lines: u32,
    /// Bytes a plugin may write to the daemon's log per minute (messages and
    /// stdout/stderr together); the excess is counted and summarised.
    pub log_bytes_per_minute: usize,
    /// Largest plugin file that is read at all.
    pub max_file_size: u64,
}

impl Default for PluginLimits {
    fn default() -> Self {
        PluginLimits {
            evaluate_timeout: DEFAULT_EVALUATE_TIMEOUT,
            configure_timeout: DEFAULT_CONFIGURE_TIMEOUT,
            compile_timeout: DEFAULT_COMPILE_TIMEOUT,
            memory: DEFAULT_MEMORY as usize,
            log_lines: DEFAULT_LOG_LINES,
            log_bytes_per_minute: DEFAULT_LOG_BYTES_PER_MINUTE as usize,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }
}

impl PluginLimits {
    /// How long the watchdog waits for a call with deadline `d` before it
    /// abandons the call: the epoch deadline fires inside wasm code, so only a
    /// call stuck in the host outlives this.
    pub fn watchdog(d: Duration) -> Duration {
        d * 2 + Duration::from_millis(250)
    }
}

/// `text` cut to `max` characters, with a note of what was cut.
pub fn capped(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}... ({n} characters in all)")
}

/// `text` cut to `max` characters with its control characters escaped, so
/// a plugin cannot forge a line of the daemon's log or drive the terminal.
pub fn printable(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for c in text.chars().take(max) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The memory cap was hit: the store's memories and tables together would
/// pass the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("would hold {wanted} bytes of memory in all, over its limit of {limit}")]
pub struct OverMemory {
    /// What the store would hold after the growth.
    pub wanted: usize,
    /// The cap.
    pub limit: usize,
}

/// Enforces [`PluginLimits::memory`] over the sum of every memory and table
/// of a store, and caps how many instances, memories and tables it creates.
#[derive(Debug)]
pub struct TotalLimiter {
    limit: usize,
    memory_bytes: usize,
    table_bytes: usize,
    table_elements: usize,
}

impl TotalLimiter {
    /// A limiter for `limit` bytes in all.
    pub fn new(limit: usize) -> TotalLimiter {
        TotalLimiter {
            limit,
            memory_bytes: 0,
            table_bytes: 0,
            table_elements: 0,
        }
    }

    /// Bytes held now (memories and tables).
    pub fn held(&self) -> usize {
        self.memory_bytes.saturating_add(self.table_bytes)
    }

    fn over(&self, wanted: usize) -> wasmtime::Error {
        wasmtime::Error::new(OverMemory {
            wanted,
            limit: self.limit,
        })
    }
}

impl ResourceLimiter for TotalLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if maximum.is_some_and(|m| desired > m) {
            return Ok(false);
        }
        let grow = desired.saturating_sub(current);
        let wanted = self.held().saturating_add(grow);
        if wanted > self.limit {
            // A trap, not a failed grow: the call ends with a cause we can name.
            return Err(self.over(wanted));
        }
        self.memory_bytes = self.memory_bytes.saturating_add(grow);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if maximum.is_some_and(|m| desired > m) {
            return Ok(false);
        }
        let grow = desired.saturating_sub(current);
        let elements = self.table_elements.saturating_add(grow);
        // Each element is a pointer's worth of host memory.
        let bytes = grow.saturating_mul(std::mem::size_of::<usize>());
        let wanted = self.held().saturating_add(bytes);
        if elements > MAX_TABLE_ELEMENTS || wanted > self.limit {
            return Err(self.over(wanted));
        }
        self.table_elements = elements;
        self.table_bytes = self.table_bytes.saturating_add(bytes);
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_MEMORIES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_text_cannot_forge_a_log_line_or_drive_the_terminal() {
        let forged = "ok\n2030-01-01T00:00:00Z  INFO nightjar: task 1 finished\x1b[2J\r";
        assert_eq!(
            printable(forged, 1024),
            "ok\\n2030-01-01T00:00:00Z  INFO nightjar: task 1 finished\\u{1b}[2J\\r"
        );
        assert_eq!(printable("ééé", 2), "éé");
        assert_eq!(capped("abcdef", 3), "abc... (6 characters in all)");
        assert_eq!(capped("abc", 3), "abc");
    }

    #[test]
    fn memories_are_capped_in_sum_not_one_by_one() {
        let mut l = TotalLimiter::new(100 << 20);
        // Two memories of 40 MiB each fit; a third does not.
        assert!(l.memory_growing(0, 40 << 20, None).unwrap());
        assert!(l.memory_growing(0, 40 << 20, None).unwrap());
        let e = l.memory_growing(0, 40 << 20, None).unwrap_err();
        let over = e.downcast_ref::<OverMemory>().expect("typed cause");
        assert_eq!(over.wanted, 120 << 20);
        assert_eq!(l.held(), 80 << 20);
    }

    #[test]
    fn growing_one_memory_counts_only_the_growth() {
        let mut l = TotalLimiter::new(10 << 20);
        assert!(l.memory_growing(0, 4 << 20, None).unwrap());
        assert!(l.memory_growing(4 << 20, 8 << 20, None).unwrap());
        assert_eq!(l.held(), 8 << 20);
        assert!(l.memory_growing(8 << 20, 12 << 20, None).is_err());
    }

    #[test]
    fn tables_count_toward_the_same_cap() {
        let mut l = TotalLimiter::new(1 << 20);
        assert!(l.memory_growing(0, (1 << 20) - 64, None).unwrap());
        assert!(l.table_growing(0, 1000, None).is_err());
        assert!(l.table_growing(0, 4, None).unwrap());
    }

    #[test]
    fn a_growth_past_the_declared_maximum_fails_without_a_trap() {
        let mut l = TotalLimiter::new(1 << 30);
        assert!(!l.memory_growing(0, 2 << 20, Some(1 << 20)).unwrap());
        assert_eq!(l.held(), 0);
    }
}
