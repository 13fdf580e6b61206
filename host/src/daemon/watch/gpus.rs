//! The daemon's GPU side: opening the backend, the sampling loop that feeds
//! the monitor and the pool, and the view `nightjar gpus` prints.

use crate::daemon::GpuView;
use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Result, bail};

use crate::config::Config;
use crate::daemon::state::{Daemon, lock};
use crate::gpu::monitor::{Monitor, MonitorConfig, RunOnGpus};
use crate::gpu::{self, GpuBackend, GpuReading};
use crate::scheduler::{PoolGpu, Seen};
use crate::time::now_ms;

/// What the daemon starts with: the backend (when it reports GPUs), the
/// pool's GPUs, and the monitor.
pub struct GpuSetup {
    /// The backend to sample, if any GPU is monitored.
    pub backend: Option<Box<dyn GpuBackend>>,
    /// The GPUs placement works with.
    pub pool: Vec<PoolGpu>,
    /// The monitor for the sampled GPUs.
    pub monitor: Option<Monitor>,
    /// What runs' manifests say of the GPUs.
    pub facts: GpuFacts,
}

/// The GPUs as a run's manifest names them: driver, CUDA, models.
#[derive(Debug, Clone, Default)]
pub struct GpuFacts {
    /// Driver version.
    pub driver: Option<String>,
    /// CUDA version the driver supports.
    pub cuda: Option<String>,
    /// Every GPU the backend reports.
    pub gpus: Vec<crate::gpu::GpuInfo>,
}

/// Opens the backend `[gpu] backend` names.
pub fn configured_backend(cfg: &Config) -> Result<Box<dyn gpu::GpuBackend>> {
    let script =
        (!cfg.gpu.sim_script.as_os_str().is_empty()).then_some(cfg.gpu.sim_script.as_path());
    let (backend, note) = gpu::open(&cfg.gpu.backend_spec(), script).map_err(anyhow::Error::msg)?;
    if let Some(note) = note {
        tracing::info!("{note}");
    }
    Ok(backend)
}

/// Sets up placement and monitoring on the GPUs `backend` reports, narrowed
/// by `gpus = [...]`. With no GPUs found, `gpus = [...]` in the config still
/// gives unmonitored GPUs by index.
pub fn setup(cfg: &Config, backend: Box<dyn gpu::GpuBackend>) -> Result<GpuSetup> {
    let (driver, cuda) = backend.versions();
    let facts = GpuFacts {
        driver,
        cuda,
        gpus: backend.inventory().to_vec(),
    };
    let inventory: Vec<_> = backend
        .inventory()
        .iter()
        .filter(|g| cfg.gpus.is_empty() || cfg.gpus.contains(&g.index))
        .cloned()
        .collect();
    if inventory.is_empty() {
        let pool = cfg.gpus.iter().map(|&i| PoolGpu::unmonitored(i)).collect();
        return Ok(GpuSetup {
            backend: None,
            pool,
            monitor: None,
            facts,
        });
    }
    if let Some(missing) = cfg
        .gpus
        .iter()
        .find(|i| !inventory.iter().any(|g| g.index == **i))
    {
        bail!(
            "key `gpus` lists GPU {missing}, but {} reports GPUs {:?}; fix `gpus` or leave it empty for all",
            backend.describe(),
            backend
                .inventory()
                .iter()
                .map(|g| g.index)
                .collect::<Vec<_>>()
        );
    }
    tracing::info!("GPUs: {}", backend.describe());
    let pool = inventory
        .iter()
        .map(|g| PoolGpu {
            index: g.index,
            uuid: g.uuid.clone(),
            mem_total: Some(g.mem_total),
            reserved: 0,
            foreign: 0,
            used: 0,
            users: 0,
            exclusive: false,
            open: false,
        })
        .collect();
    let mcfg = monitor_config(cfg);
    Ok(GpuSetup {
        backend: Some(backend),
        pool,
        monitor: Some(Monitor::new(&inventory, mcfg)),
        facts,
    })
}

/// The monitor's thresholds, from `[gpu]`.
pub fn monitor_config(cfg: &Config) -> MonitorConfig {
    MonitorConfig {
        foreign_util_max: cfg.gpu.foreign_util_max,
        foreign_quiet_ms: cfg.gpu.foreign_quiet.as_millis() as i64,
        host_mem_min_free: cfg.gpu.host_mem_min_free.as_u64(),
        stall_after_ms: cfg.gpu.stall_after.as_millis() as i64,
        series_every_ms: cfg.gpu.series_every.as_millis() as i64,
    }
}

/// Reads every monitored GPU once (NVML calls block: run off the runtime).
pub fn read_all(
    backend: &mut dyn GpuBackend,
    indices: &[u32],
) -> Vec<(u32, Result<GpuReading, String>)> {
    indices.iter().map(|&i| (i, backend.read(i))).collect()
}

/// `MemAvailable` from /proc/meminfo, in bytes.
fn host_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The session a process belongs to (field 6 of /proc/PID/stat).
fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split(' ').nth(3)?.parse().ok()
}

/// The run a process belongs to: its per-run cgroup, else its session
/// (every run's processes are in its supervisor's session unless they left it).
fn owner_of(pid: u32, sessions: &HashMap<u32, i64>) -> Option<i64> {
    if let Ok(cg) = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        && let Some(id) = cg.lines().find_map(|l| {
            let name = l.rsplit('/').next()?;
            name.strip_prefix("run-")?.parse::<i64>().ok()
        })
        && sessions.values().any(|r| *r == id)
    {
        return Some(id);
    }
    sessions.get(&session_of(pid)?).copied()
}

/// Bytes in a run folder's logs, for the stall check.
pub(crate) fn log_bytes(dir: &std::path::Path) -> u64 {
    ["stdout.log", "stdout.log.1", "stderr.log", "stderr.log.1"]
        .iter()
        // Not through a link: the run folder may be its task's owner's.
        .filter_map(|f| std::fs::symlink_metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

impl Daemon {
    /// Each GPU the backend reported at start: index to model name.
    pub fn gpu_names(&self) -> std::collections::BTreeMap<u32, String> {
        let facts = &self.watch.gpu_facts;
        facts
            .gpus
            .iter()
            .map(|g| (g.index, g.name.clone()))
            .collect()
    }

    /// Applies one round of readings: monitor, pool, stored series and stall marks.
    pub fn apply_readings(&self, readings: Vec<(u32, Result<GpuReading, String>)>) {
        let now = now_ms();
        let (runs, sessions): (Vec<RunOnGpus>, HashMap<u32, i64>) = {
            let placed = lock(&self.runs.placed);
            let runs = placed
                .iter()
                .filter(|(_, h)| !h.placement.gpus.is_empty())
                .map(|(&run, h)| RunOnGpus {
                    run,
                    gpus: h.placement.gpus.clone(),
                    session: h.session,
                    log_bytes: log_bytes(&h.dir),
                })
                .collect();
            let sessions = placed
                .iter()
                .filter(|(_, h)| h.session > 0)
                .map(|(&run, h)| (h.session, run))
                .collect();
            (runs, sessions)
        };
        let owner = |pid: u32| owner_of(pid, &sessions);
        let (fx, states) = {
            let mut guard = lock(&self.watch.gpu);
            let Some(m) = guard.as_mut() else { return };
            let fx = m.apply(now, readings, &runs, &owner, host_available());
            let states: Vec<(u32, Seen)> = m
                .gpus
                .iter()
                .map(|g| {
                    let seen = Seen {
                        open: g.open,
                        foreign: g.foreign_mem,
                        used: g.reading.as_ref().map_or(0, |r| r.mem_used),
                    };
                    (g.info.index, seen)
                })
                .collect();
            (fx, states)
        };
        {
            let mut pool = lock(&self.pool);
            for (index, seen) in states {
                pool.observe(index, seen);
            }
        }
        let mut store = self.store();
        if let Err(e) = store.add_series(&fx.series) {
            tracing::error!("cannot store GPU series: {e}");
        }
        drop(store);
        self.mark_stalled(&fx.stall_changes, now);
        if fx.opened_or_closed {
            self.changed();
        }
    }

    /// Records runs that became stalled (true) or active again (false) at
    /// `now`, from this machine's monitor or a node's samples.
    pub fn mark_stalled(&self, changes: &[(i64, bool)], now: i64) {
        if changes.is_empty() {
            return;
        }
        let mut store = self.store();
        for (run, stalled) in changes {
            if let Err(e) = store.set_stalled(*run, stalled.then_some(now), now) {
                tracing::error!("run {run}: cannot record stall mark: {e}");
            }
        }
        drop(store);
        self.changed();
    }

    /// Samples the GPUs every `gpu.sample_period` for the daemon's life.
    pub async fn sample_loop(self: Arc<Self>, mut backend: Box<dyn GpuBackend>) {
        let indices: Vec<u32> = lock(&self.pool).gpus.iter().map(|g| g.index).collect();
        let mut tick = tokio::time::interval(self.cfg.gpu.sample_period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let idx = indices.clone();
            let Ok((b, readings)) = tokio::task::spawn_blocking(move || {
                let r = read_all(backend.as_mut(), &idx);
                (backend, r)
            })
            .await
            else {
                tracing::error!("GPU sampling thread failed; GPUs are no longer monitored");
                return;
            };
            backend = b;
            self.apply_readings(readings);
        }
    }

    /// How many GPUs placement has, and the largest memory among them (when known).
    pub fn gpu_capacity(&self) -> (usize, Option<u64>) {
        let pool = lock(&self.pool);
        (
            pool.gpus.len(),
            pool.gpus.iter().filter_map(|g| g.mem_total).max(),
        )
    }

    /// Every GPU with its reading, reservations and tasks, for `nightjar gpus`.
    pub fn gpu_views(&self) -> Vec<GpuView> {
        self.pool_gpu_views()
    }

    /// Under a batch system's executor (SLURM), its nodes' GPUs as it tells
    /// them, with the daemon's runs on each node; `None` for a local
    /// executor or when the batch system does not answer. Blocking.
    pub fn node_gpu_views(&self) -> Option<Vec<GpuView>> {
        let nodes = self.runs.gpu_nodes()?;
        let store = self.store();
        Some(
            nodes
                .into_iter()
                .enumerate()
                .map(|(i, g)| GpuView {
                    index: i as u32,
                    uuid: String::new(),
                    name: g.name,
                    monitored: g.reading.is_some(),
                    healthy: true,
                    open: g.open,
                    reason: g.reason,
                    util: g.reading.as_ref().map(|(r, _)| r.util),
                    mem_used: g.reading.as_ref().map(|(r, _)| r.mem_used),
                    mem_total: g.reading.as_ref().map(|(_, total)| *total),
                    mem_reserved: 0,
                    mem_foreign: 0,
                    temp_c: g.reading.as_ref().map(|(r, _)| r.temp_c),
                    power_w: g.reading.as_ref().map(|(r, _)| r.power_mw as f64 / 1e3),
                    tasks: g
                        .runs
                        .iter()
                        .filter_map(|r| store.run(*r).ok().map(|r| r.task_id))
                        .collect(),
                    runs: g.runs,
                    node: Some(g.node),
                })
                .collect(),
        )
    }

    /// The pool's GPUs with their readings and runs.
    fn pool_gpu_views(&self) -> Vec<GpuView> {
        // One lock at a time (daemon/locks.rs): each read, then let go.
        let placed: Vec<(i64, Vec<u32>)> = lock(&self.runs.placed)
            .iter()
            .map(|(r, h)| (*r, h.placement.gpus.clone()))
            .collect();
        let tasks_on = |index: u32| -> Vec<i64> {
            let mut runs: Vec<i64> = placed
                .iter()
                .filter(|(_, gpus)| gpus.contains(&index))
                .map(|(r, _)| *r)
                .collect();
            runs.sort_unstable();
            runs
        };
        let (gpus, policy_closed) = {
            let pool = lock(&self.pool);
            (pool.gpus.clone(), pool.policy_closed.clone())
        };
        let monitor = lock(&self.watch.gpu);
        gpus.iter()
            .map(|p| {
                let status = monitor
                    .as_ref()
                    .and_then(|m| m.gpus.iter().find(|g| g.info.index == p.index));
                let reading = status.and_then(|s| s.reading.as_ref());
                GpuView {
                    index: p.index,
                    uuid: p.uuid.clone(),
                    name: status
                        .map(|s| s.info.name.clone())
                        .unwrap_or_else(|| "unmonitored".into()),
                    monitored: status.is_some(),
                    healthy: status.is_none_or(|s| s.healthy),
                    open: p.open && !policy_closed.contains_key(&p.index),
                    reason: status
                        .and_then(|s| s.closed_reason.clone())
                        .or_else(|| policy_closed.get(&p.index).cloned()),
                    util: reading.map(|r| r.util),
                    mem_used: reading.map(|r| r.mem_used),
                    mem_total: p.mem_total,
                    mem_reserved: p.reserved,
                    mem_foreign: p.foreign,
                    temp_c: reading.map(|r| r.temp_c),
                    power_w: reading.map(|r| r.power_mw as f64 / 1000.0),
                    runs: tasks_on(p.index),
                    tasks: Vec::new(),
                    node: None,
                }
            })
            .collect()
    }
}
