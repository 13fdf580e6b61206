//! The monitor's public types: its thresholds, each GPU's status, a run's
//! place on the GPUs, a series point and what a round changed.

use serde::{Deserialize, Serialize};

use super::GpuInfo;
use super::GpuReading;

/// Thresholds, from the `[gpu]` config.
#[derive(Debug, Clone)]
pub struct MonitorConfig {
    /// Foreign load must stay under this utilisation (percent)...
    pub foreign_util_max: u32,
    /// ...for this long (ms) before the GPU is offered again.
    pub foreign_quiet_ms: i64,
    /// GPUs are offered only while the host has this much memory available.
    pub host_mem_min_free: u64,
    /// A GPU run with no GPU utilisation and no log growth for this long (ms) is stalled.
    pub stall_after_ms: i64,
    /// One series point per run and GPU at most this often (ms).
    pub series_every_ms: i64,
}

/// One GPU as the daemon sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GpuStatus {
    /// What it is.
    pub info: GpuInfo,
    /// The latest good reading.
    pub reading: Option<GpuReading>,
    /// False while reads fail.
    pub healthy: bool,
    /// The last read error.
    pub error: Option<String>,
    /// Memory of processes nightjar did not start, bytes.
    pub foreign_mem: u64,
    /// Their pids.
    pub foreign_pids: Vec<u32>,
    /// The last time foreign load was at or above the threshold (ms).
    pub foreign_busy_at: Option<i64>,
    /// Whether new work may be placed on it.
    pub open: bool,
    /// Why not, when closed.
    pub closed_reason: Option<String>,
}

/// A run that holds GPUs, as the monitor needs to know it.
#[derive(Debug, Clone)]
pub struct RunOnGpus {
    /// Run id.
    pub run: i64,
    /// GPU indices it was given.
    pub gpus: Vec<u32>,
    /// Its supervisor's pid, which is also its session id.
    pub session: u32,
    /// Total bytes in its log files now (for the stall check).
    pub log_bytes: u64,
}

/// One downsampled point of a run's GPU series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Run id.
    pub run: i64,
    /// When (Unix ms).
    pub at: i64,
    /// GPU index.
    pub gpu: u32,
    /// Utilisation, percent.
    pub util: u32,
    /// The run's memory on it, bytes.
    pub mem: u64,
    /// Temperature, °C.
    pub temp_c: u32,
    /// Power, mW.
    pub power_mw: u32,
}

/// What one round of readings changed that the daemon must act on.
#[derive(Debug, Default)]
pub struct ReadingEffects {
    /// Series points to store.
    pub series: Vec<SeriesPoint>,
    /// Runs that became stalled (true) or active again (false).
    pub stall_changes: Vec<(i64, bool)>,
    /// GPUs whose open/closed state changed.
    pub opened_or_closed: bool,
}
