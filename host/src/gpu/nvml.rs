//! The NVML backend: nvml-wrapper, loaded at run time (from the default
//! `libnvidia-ml.so.1` or a configured path). Every reading is NVML calls
//! only, never an `nvidia-smi` subprocess.

use std::path::Path;

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;

use super::{GpuBackend, GpuInfo, GpuProcess, GpuReading};

/// GPUs read through NVML.
pub struct NvmlGpus {
    nvml: Nvml,
    info: Vec<GpuInfo>,
    driver: String,
    cuda: Option<String>,
}

impl NvmlGpus {
    /// Loads NVML (from `lib` if given) and reads the inventory.
    pub fn open(lib: Option<&Path>) -> Result<NvmlGpus, String> {
        let nvml = match lib {
            Some(p) => Nvml::builder().lib_path(p.as_os_str()).init(),
            None => Nvml::init(),
        }
        .map_err(|e| {
            format!(
                "cannot load NVML{}: {e}",
                lib.map(|p| format!(" from {}", p.display()))
                    .unwrap_or_default()
            )
        })?;
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML device count: {e}"))?;
        let mut info = Vec::with_capacity(count as usize);
        for index in 0..count {
            let d = nvml
                .device_by_index(index)
                .map_err(|e| format!("NVML GPU {index}: {e}"))?;
            info.push(GpuInfo {
                index,
                uuid: d.uuid().unwrap_or_else(|e| format!("unknown ({e})")),
                name: d.name().unwrap_or_else(|e| format!("unknown ({e})")),
                mem_total: d.memory_info().map(|m| m.total).unwrap_or(0),
            });
        }
        let driver = nvml.sys_driver_version().unwrap_or_else(|_| "?".into());
        let cuda = nvml
            .sys_cuda_driver_version()
            .ok()
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
        Ok(NvmlGpus {
            nvml,
            info,
            driver,
            cuda,
        })
    }
}

fn optional<T>(r: Result<T, NvmlError>) -> Result<Option<T>, NvmlError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(NvmlError::NotSupported) => Ok(None),
        Err(e) => Err(e),
    }
}

impl GpuBackend for NvmlGpus {
    fn describe(&self) -> String {
        format!("NVML, driver {} ({} GPUs)", self.driver, self.info.len())
    }

    fn inventory(&self) -> &[GpuInfo] {
        &self.info
    }

    fn versions(&self) -> (Option<String>, Option<String>) {
        (
            Some(self.driver.clone()).filter(|d| d != "?"),
            self.cuda.clone(),
        )
    }

    fn read(&mut self, index: u32) -> Result<GpuReading, String> {
        let read = || -> Result<GpuReading, NvmlError> {
            let d = self.nvml.device_by_index(index)?;
            let util = d.utilization_rates()?;
            let mem = d.memory_info()?;
            let processes = optional(d.running_compute_processes())?
                .unwrap_or_default()
                .into_iter()
                .map(|p| GpuProcess {
                    pid: p.pid,
                    mem: match p.used_gpu_memory {
                        UsedGpuMemory::Used(b) => b,
                        UsedGpuMemory::Unavailable => 0,
                    },
                })
                .collect();
            Ok(GpuReading {
                util: util.gpu,
                util_mem: util.memory,
                mem_used: mem.used,
                temp_c: d.temperature(TemperatureSensor::Gpu)?,
                power_mw: optional(d.power_usage())?.unwrap_or(0),
                energy_mj: optional(d.total_energy_consumption())?,
                processes,
            })
        };
        read().map_err(|e| format!("NVML GPU {index}: {e}"))
    }
}
