//! `[gpu]`: GPU monitoring and placement.

use std::path::PathBuf;
use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;

/// GPU monitoring and placement.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpuConfig {
    /// `auto`, `nvml`, `nvml:/path/to/libnvidia-ml.so`, `sim:2xA100-80GB` or `none`.
    pub backend: String,
    /// For simulated GPUs: a TOML file of per-GPU values, re-read when it changes.
    pub sim_script: PathBuf,
    /// How often every GPU is read.
    #[serde(with = "humantime_serde_compat")]
    pub sample_period: Duration,
    /// `index` or `uuid`: how `CUDA_VISIBLE_DEVICES` names the GPUs given.
    pub visible_devices: VisibleDevices,
    /// Let several tasks share a GPU when their `gpu_mem` fits; else a GPU is exclusive.
    pub share: bool,
    /// A GPU with foreign processes is offered only while their utilisation stays under this (percent)...
    pub foreign_util_max: u32,
    /// ...for at least this long.
    #[serde(with = "humantime_serde_compat")]
    pub foreign_quiet: Duration,
    /// GPUs are offered only while the host has this much memory available.
    pub host_mem_min_free: ByteSize,
    /// A GPU run with no GPU utilisation and no log growth for this long is marked stalled.
    #[serde(with = "humantime_serde_compat")]
    pub stall_after: Duration,
    /// One point of each run's GPU series per this period.
    #[serde(with = "humantime_serde_compat")]
    pub series_every: Duration,
    /// Two runs never start on the same GPU less than this apart (CUDA
    /// contexts starting at the same second fight over memory); 0: no stagger.
    #[serde(with = "humantime_serde_compat")]
    pub stagger: Duration,
}

/// How `CUDA_VISIBLE_DEVICES` names GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VisibleDevices {
    /// `0,1`
    Index,
    /// `GPU-…,GPU-…` (stable across reboots and driver renumbering)
    Uuid,
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            backend: "auto".into(),
            sim_script: PathBuf::new(),
            sample_period: Duration::from_secs(1),
            visible_devices: VisibleDevices::Index,
            share: false,
            foreign_util_max: 15,
            foreign_quiet: Duration::from_secs(5),
            host_mem_min_free: ByteSize::gib(16),
            stall_after: Duration::from_secs(30 * 60),
            series_every: Duration::from_secs(10),
            stagger: Duration::ZERO,
        }
    }
}

impl GpuConfig {
    /// The backend named by `backend` (validated at load).
    pub fn backend_spec(&self) -> crate::gpu::BackendSpec {
        self.backend
            .parse()
            .unwrap_or(crate::gpu::BackendSpec::None)
    }
}
