//! GPUs: one trait over the backends (NVML, simulated, none), the monitor
//! that turns readings into GPU state and per-run records.

pub mod energy;
pub mod monitor;
mod monitor_types;
pub mod node;
pub mod node_live;
pub mod nvml;
pub mod sim;

use serde::{Deserialize, Serialize};

/// What a GPU is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// Index as the driver numbers it (and `CUDA_VISIBLE_DEVICES` by index).
    pub index: u32,
    /// `GPU-…` UUID.
    pub uuid: String,
    /// Model name.
    pub name: String,
    /// Memory in bytes.
    pub mem_total: u64,
}

/// A process holding GPU memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcess {
    /// Process id.
    pub pid: u32,
    /// GPU memory it uses, bytes (0 when the driver does not say).
    pub mem: u64,
}

/// One reading of one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuReading {
    /// GPU utilisation, percent.
    pub util: u32,
    /// Memory-controller utilisation, percent.
    pub util_mem: u32,
    /// Memory used, bytes.
    pub mem_used: u64,
    /// Temperature, degrees Celsius.
    pub temp_c: u32,
    /// Power draw, milliwatts.
    pub power_mw: u32,
    /// Total-energy counter, millijoules, where the GPU has one.
    pub energy_mj: Option<u64>,
    /// Compute processes on it.
    pub processes: Vec<GpuProcess>,
}

/// A source of GPU readings.
pub trait GpuBackend: Send {
    /// A one-line description for logs (`NVML 550.54 (2 GPUs)`).
    fn describe(&self) -> String;
    /// The GPUs, fixed for the backend's life.
    fn inventory(&self) -> &[GpuInfo];
    /// Reads one GPU; an error marks it unhealthy until a read succeeds again.
    fn read(&mut self, index: u32) -> Result<GpuReading, String>;
    /// The driver's version and the CUDA version it supports (`12.4`), where known.
    fn versions(&self) -> (Option<String>, Option<String>) {
        (None, None)
    }
}

/// No GPUs at all.
pub struct NoGpus;

impl GpuBackend for NoGpus {
    fn describe(&self) -> String {
        "no GPU backend".into()
    }
    fn inventory(&self) -> &[GpuInfo] {
        &[]
    }
    fn read(&mut self, index: u32) -> Result<GpuReading, String> {
        Err(format!("no GPU {index}: no GPU backend"))
    }
}

/// Which backend the config asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendSpec {
    /// NVML if a driver is there, else none (said once in the log).
    Auto,
    /// NVML, from the default library or this path; an error if it cannot load.
    Nvml(Option<std::path::PathBuf>),
    /// Simulated GPUs, such as `sim:2xA100-80GB`.
    Sim(String),
    /// No GPUs (or only the unmonitored indices of `gpus`).
    None,
}

impl std::str::FromStr for BackendSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => BackendSpec::Auto,
            "none" => BackendSpec::None,
            "nvml" => BackendSpec::Nvml(None),
            _ if s.starts_with("nvml:") => BackendSpec::Nvml(Some(s[5..].into())),
            _ if s.starts_with("sim:") => {
                sim::parse_spec(&s[4..])?;
                BackendSpec::Sim(s[4..].to_string())
            }
            _ => {
                return Err(format!(
                    "`{s}` is not a GPU backend: use auto, nvml, nvml:/path/to/libnvidia-ml.so, sim:2xA100-80GB or none"
                ));
            }
        })
    }
}

/// Opens the backend `spec` asks for. `Auto` falls back to none with the
/// reason returned as a note, so the daemon can say it once.
pub fn open(
    spec: &BackendSpec,
    sim_script: Option<&std::path::Path>,
) -> Result<(Box<dyn GpuBackend>, Option<String>), String> {
    match spec {
        BackendSpec::None => Ok((Box::new(NoGpus), None)),
        BackendSpec::Sim(s) => Ok((Box::new(sim::SimGpus::new(s, sim_script)?), None)),
        BackendSpec::Nvml(path) => Ok((Box::new(nvml::NvmlGpus::open(path.as_deref())?), None)),
        BackendSpec::Auto => match nvml::NvmlGpus::open(None) {
            Ok(b) => Ok((Box::new(b), None)),
            Err(e) => Ok((
                Box::new(NoGpus),
                Some(format!("no NVIDIA driver found ({e}); running CPU-only")),
            )),
        },
    }
}
