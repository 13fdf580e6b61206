//! The GPUs and the policy chain as `nightjar gpus` and `nightjar plugins ls`
//! show them.

use serde::{Deserialize, Serialize};

/// One GPU as `nightjar gpus` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuView {
    /// Index.
    pub index: u32,
    /// UUID (empty when unmonitored).
    pub uuid: String,
    /// Model.
    pub name: String,
    /// Read by a backend (else only known by index from the config).
    pub monitored: bool,
    /// Reads succeed.
    pub healthy: bool,
    /// New work may be placed on it.
    pub open: bool,
    /// Why it is closed, when it is.
    pub reason: Option<String>,
    /// Utilisation, percent.
    pub util: Option<u32>,
    /// Memory used (all processes), bytes.
    pub mem_used: Option<u64>,
    /// Memory in all, bytes.
    pub mem_total: Option<u64>,
    /// Memory reserved by nightjar's placements, bytes.
    pub mem_reserved: u64,
    /// Memory held by processes nightjar did not start, bytes.
    pub mem_foreign: u64,
    /// Temperature, °C.
    pub temp_c: Option<u32>,
    /// Power, W.
    pub power_w: Option<f64>,
    /// Runs on it.
    pub runs: Vec<i64>,
    /// Their tasks.
    pub tasks: Vec<i64>,
    /// The cluster node it is on, under a batch system's executor (SLURM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl GpuView {
    /// Memory free for placement, as the scheduler counts it (see [`mem_free`]).
    pub fn mem_free(&self) -> Option<u64> {
        self.mem_total.map(|t| {
            mem_free(
                t,
                self.mem_reserved,
                self.mem_foreign,
                self.mem_used.unwrap_or(0),
            )
        })
    }
}

/// Memory of a GPU free for new work: what nightjar's placements reserved
/// plus what processes it did not start hold, or what the GPU says is in use
/// if that is more (a run past its reservation, the driver's own share).
/// `used` counts every process, foreign ones too, so it is never added to
/// `foreign`.
pub fn mem_free(total: u64, reserved: u64, foreign: u64, used: u64) -> u64 {
    total.saturating_sub(reserved.saturating_add(foreign).max(used))
}

/// A member's state, as `nightjar plugins ls` shows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MemberView {
    /// Name.
    pub name: String,
    /// Where it came from.
    pub source: String,
    /// sha256 of the component.
    pub sha256: Option<String>,
    /// The version of the contract it implements (`0.1.0`, `0.2.0`).
    #[serde(default)]
    pub api_version: Option<String>,
    /// Where its `nightjar-api-version` section disagrees with what it
    /// exports (the exports win).
    #[serde(default)]
    pub api_note: Option<String>,
    /// `ok`, `slow`, `failing` or `disabled`.
    pub state: String,
    /// Failures among the recent calls, as `failed/calls`.
    pub failure_rate: String,
    /// Failures among the recent calls.
    pub failures: u32,
    /// `open` or `closed`.
    pub on_failure: String,
    /// The last failure.
    pub last_error: Option<String>,
    /// The last failure's cause (`timeout`, `memory`, ...).
    pub last_cause: Option<String>,
    /// When the last failure happened (Unix ms).
    pub last_failure_at: Option<i64>,
    /// CPU used over the last minute, percent of one core.
    pub cpu_percent: f64,
}

#[cfg(test)]
mod tests {
    use super::mem_free;

    const GIB: u64 = 1 << 30;

    #[test]
    fn foreign_memory_is_counted_once_though_used_includes_it() {
        // As an H200 read through NVML: 105 GiB held by a process nightjar
        // did not start, so in use and foreign both.
        assert_eq!(mem_free(140 * GIB, 0, 105 * GIB, 105 * GIB), 35 * GIB);
    }

    #[test]
    fn a_reservation_not_yet_allocated_is_taken_and_use_past_it_too() {
        assert_eq!(mem_free(80 * GIB, 20 * GIB, 0, GIB), 60 * GIB);
        assert_eq!(mem_free(80 * GIB, 20 * GIB, 0, 30 * GIB), 50 * GIB);
        assert_eq!(mem_free(80 * GIB, 20 * GIB, 10 * GIB, 200 * GIB), 0);
    }
}
