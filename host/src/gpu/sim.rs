//! Simulated GPUs, for tests, demos and the simulator: a spec such as
//! `2xA100-80GB` or `1xA100-80GB+1xRTX4090-24GB`, deterministic by default,
//! with utilisation, temperature, power, memory, foreign processes and
//! failures scriptable from a TOML file that is re-read when it changes:
//!
//! ```toml
//! [[gpu]]            # GPU 0
//! util = 37
//! temp = 61
//! power_w = 250
//! mem_used = "10GiB"
//! processes = [{ pid = 4242, mem = "1GiB" }]
//! fail = false
//! ```

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytesize::ByteSize;
use serde::Deserialize;

use super::{GpuBackend, GpuInfo, GpuProcess, GpuReading};

/// Parses `2xA100-80GB+1xRTX4090-24GB` into (count, model, memory) groups.
pub fn parse_spec(spec: &str) -> Result<Vec<(u32, String, u64)>, String> {
    let bad =
        || format!("simulated GPUs `{spec}`: write them as `2xA100-80GB` (groups joined by `+`)");
    spec.split('+')
        .map(|group| {
            let (n, rest) = group.split_once('x').ok_or_else(bad)?;
            let n: u32 = n.parse().map_err(|_| bad())?;
            let (model, mem) = rest.rsplit_once('-').ok_or_else(bad)?;
            let gb: u64 = mem
                .strip_suffix("GB")
                .and_then(|g| g.parse().ok())
                .ok_or_else(bad)?;
            if n == 0 || n > 64 || model.is_empty() {
                return Err(bad());
            }
            Ok((n, model.to_string(), gb << 30))
        })
        .collect()
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Script {
    gpu: Vec<ScriptGpu>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ScriptGpu {
    util: u32,
    util_mem: u32,
    temp: u32,
    power_w: u32,
    mem_used: ByteSize,
    energy: bool,
    processes: Vec<ScriptProcess>,
    fail: bool,
}

impl Default for ScriptGpu {
    fn default() -> Self {
        ScriptGpu {
            util: 0,
            util_mem: 0,
            temp: 35,
            power_w: 50,
            mem_used: ByteSize::b(0),
            energy: true,
            processes: Vec::new(),
            fail: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptProcess {
    pid: u32,
    mem: ByteSize,
}

/// Simulated GPUs.
pub struct SimGpus {
    spec: String,
    info: Vec<GpuInfo>,
    script_path: Option<PathBuf>,
    script: Script,
    seen: Option<SystemTime>,
    energy_mj: Vec<u64>,
    last_read_ms: Vec<i64>,
}

impl SimGpus {
    /// Simulated GPUs from `spec`, scripted by `script` if given.
    pub fn new(spec: &str, script: Option<&Path>) -> Result<SimGpus, String> {
        let mut info = Vec::new();
        for (n, model, mem) in parse_spec(spec)? {
            for _ in 0..n {
                let index = info.len() as u32;
                info.push(GpuInfo {
                    index,
                    uuid: format!("GPU-51300000-0000-0000-0000-{index:012}"),
                    name: format!("Simulated {model}"),
                    mem_total: mem,
                });
            }
        }
        let n = info.len();
        Ok(SimGpus {
            spec: spec.to_string(),
            info,
            script_path: script.map(Path::to_path_buf),
            script: Script::default(),
            seen: None,
            energy_mj: vec![0; n],
            last_read_ms: vec![0; n],
        })
    }

    fn refresh(&mut self) -> Result<(), String> {
        let Some(path) = &self.script_path else {
            return Ok(());
        };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if modified.is_none() || modified == self.seen {
            return Ok(());
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        self.script =
            toml::from_str(&text).map_err(|e| format!("GPU script {}: {e}", path.display()))?;
        self.seen = modified;
        Ok(())
    }
}

impl GpuBackend for SimGpus {
    fn describe(&self) -> String {
        format!("simulated {} ({} GPUs)", self.spec, self.info.len())
    }

    fn versions(&self) -> (Option<String>, Option<String>) {
        (Some("simulated".into()), None)
    }

    fn inventory(&self) -> &[GpuInfo] {
        &self.info
    }

    fn read(&mut self, index: u32) -> Result<GpuReading, String> {
        self.refresh()?;
        let i = index as usize;
        if i >= self.info.len() {
            return Err(format!("no simulated GPU {index}"));
        }
        let g = self.script.gpu.get(i).cloned().unwrap_or_default();
        if g.fail {
            return Err(format!("simulated GPU {index}: GPU is lost"));
        }
        // The energy counter integrates the scripted power over real time.
        let now = crate::time::now_ms();
        if self.last_read_ms[i] > 0 {
            self.energy_mj[i] += (g.power_w as u64) * (now - self.last_read_ms[i]).max(0) as u64;
        }
        self.last_read_ms[i] = now;
        Ok(GpuReading {
            util: g.util,
            util_mem: g.util_mem,
            mem_used: g.mem_used.as_u64().min(self.info[i].mem_total),
            temp_c: g.temp,
            power_mw: g.power_w * 1000,
            energy_mj: g.energy.then_some(self.energy_mj[i]),
            processes: g
                .processes
                .iter()
                .map(|p| GpuProcess {
                    pid: p.pid,
                    mem: p.mem.as_u64(),
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_groups_expand_to_indexed_gpus() {
        let sim = SimGpus::new("2xA100-80GB+1xRTX4090-24GB", None).unwrap();
        let inv = sim.inventory();
        assert_eq!(inv.len(), 3);
        assert_eq!(inv[1].mem_total, 80 << 30);
        assert_eq!(inv[2].name, "Simulated RTX4090");
        assert!(parse_spec("2A100").is_err());
        assert!(parse_spec("0xA100-80GB").is_err());
    }

    #[test]
    fn script_drives_readings_and_failures() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("gpus.toml");
        std::fs::write(&script, "[[gpu]]\nutil = 40\ntemp = 70\nprocesses = [{ pid = 7, mem = \"1GiB\" }]\n[[gpu]]\nfail = true\n").unwrap();
        let mut sim = SimGpus::new("2xA100-80GB", Some(&script)).unwrap();
        let r = sim.read(0).unwrap();
        assert_eq!((r.util, r.temp_c), (40, 70));
        assert_eq!(
            r.processes,
            vec![GpuProcess {
                pid: 7,
                mem: 1 << 30
            }]
        );
        assert!(sim.read(1).unwrap_err().contains("lost"));
        assert!(sim.read(2).is_err());
    }
}
