//! Turns rounds of GPU readings (every GPU read once per sample period)
//! into what the daemon acts on: each GPU's health, the memory and load of processes nightjar did not start (foreign),
//! whether the GPU may be offered, per-run accumulators (peak memory, mean
//! and max utilisation, max temperature, energy), a downsampled series, and
//! the `stalled` mark for GPU runs that show no sign of life.

pub use nightjar_core::api::wire::RunGpuRecord;
use std::collections::HashMap;

pub use super::monitor_types::{GpuStatus, MonitorConfig, ReadingEffects, RunOnGpus, SeriesPoint};
use super::{GpuInfo, GpuReading};

#[derive(Debug, Clone, Default)]
struct Acc {
    uuid: String,
    samples: u32,
    util_sum: u64,
    util_max: u32,
    mem_peak: u64,
    temp_max: u32,
    counter_first: Option<u64>,
    counter_last: Option<u64>,
    power_mj: f64,
    last_at: Option<i64>,
    last_series: Option<i64>,
    share: super::energy::EnergyAcc,
}

#[derive(Debug, Clone, Default)]
struct RunState {
    per_gpu: HashMap<u32, Acc>,
    last_active: i64,
    log_bytes: u64,
    stalled: bool,
}

/// The monitor's state.
pub struct Monitor {
    cfg: MonitorConfig,
    /// Every GPU, by position (index order).
    pub gpus: Vec<GpuStatus>,
    runs: HashMap<i64, RunState>,
    /// Whether host memory is above the minimum.
    pub host_mem_ok: bool,
    /// The tariff runs' energy is priced by (none: no cost).
    pub tariff: Option<crate::tariff::Tariff>,
    /// Each GPU's energy summed from its power readings (J), and its last
    /// reading's time and power (ms, mW): the metrics' energy for a GPU
    /// without an energy counter.
    summed: HashMap<u32, (f64, Option<(i64, u32)>)>,
}

/// The longest gap between two readings whose power is summed: a longer
/// one (a stopped daemon, a clock step) adds this much at most.
const MAX_GAP_MS: i64 = 60_000;

impl Monitor {
    /// A monitor for `inventory`.
    pub fn new(inventory: &[GpuInfo], cfg: MonitorConfig) -> Monitor {
        let gpus = inventory
            .iter()
            .map(|info| GpuStatus {
                info: info.clone(),
                reading: None,
                healthy: true,
                error: None,
                foreign_mem: 0,
                foreign_pids: Vec::new(),
                foreign_busy_at: None,
                open: false,
                closed_reason: Some("not read yet".into()),
            })
            .collect();
        Monitor {
            cfg,
            gpus,
            runs: HashMap::new(),
            host_mem_ok: true,
            tariff: None,
            summed: HashMap::new(),
        }
    }

    /// Applies one round of readings taken at `now`. `owner` maps a pid to the run it
    /// belongs to (None: foreign); `host_available` is MemAvailable in bytes.
    pub fn apply(
        &mut self,
        now: i64,
        readings: Vec<(u32, Result<GpuReading, String>)>,
        runs: &[RunOnGpus],
        owner: &dyn Fn(u32) -> Option<i64>,
        host_available: Option<u64>,
    ) -> ReadingEffects {
        let mut fx = ReadingEffects::default();
        self.host_mem_ok = host_available.is_none_or(|a| a >= self.cfg.host_mem_min_free);
        for (index, result) in readings {
            let Some(g) = self.gpus.iter_mut().find(|g| g.info.index == index) else {
                continue;
            };
            match result {
                Ok(r) => {
                    let foreign: Vec<_> = r
                        .processes
                        .iter()
                        .filter(|p| owner(p.pid).is_none())
                        .collect();
                    g.foreign_mem = foreign.iter().fold(0u64, |a, p| a.saturating_add(p.mem));
                    g.foreign_pids = foreign.iter().map(|p| p.pid).collect();
                    let ours = runs.iter().any(|run| run.gpus.contains(&index));
                    // With only foreign processes (or unexplained use), the load is theirs.
                    let foreign_util = if !foreign.is_empty() || (!ours && r.util > 0) {
                        r.util
                    } else {
                        0
                    };
                    if foreign_util >= self.cfg.foreign_util_max {
                        g.foreign_busy_at = Some(now);
                    }
                    let summed = self.summed.entry(index).or_default();
                    if let Some((at, mw)) = summed.1 {
                        let ms = now.saturating_sub(at).clamp(0, MAX_GAP_MS);
                        summed.0 += f64::from(mw) * ms as f64 / 1e6;
                    }
                    summed.1 = Some((now, r.power_mw));
                    g.healthy = true;
                    g.error = None;
                    g.reading = Some(r);
                }
                Err(e) => {
                    g.healthy = false;
                    g.error = Some(e);
                }
            }
            let (open, reason) = if !g.healthy {
                (
                    false,
                    Some(format!(
                        "unhealthy: {}",
                        g.error.as_deref().unwrap_or("read failed")
                    )),
                )
            } else if g
                .foreign_busy_at
                .is_some_and(|b| now.saturating_sub(b) < self.cfg.foreign_quiet_ms)
            {
                (
                    false,
                    Some(format!(
                        "busy with processes nightjar did not start (needs utilisation under {}% for {})",
                        self.cfg.foreign_util_max,
                        crate::time::fmt_span(self.cfg.foreign_quiet_ms)
                    )),
                )
            } else if !self.host_mem_ok {
                (
                    false,
                    Some("host memory below gpu.host_mem_min_free".to_string()),
                )
            } else {
                (true, None)
            };
            if open != g.open {
                fx.opened_or_closed = true;
            }
            g.open = open;
            g.closed_reason = reason;
        }
        self.account(now, runs, owner, &mut fx);
        fx
    }

    /// GPU `index`'s energy since counting began (J): its driver's counter
    /// where it has one, else the sum of its power readings since the
    /// daemon started; `None` before its first reading.
    pub fn energy_j(&self, index: u32) -> Option<f64> {
        let counter = self
            .gpus
            .iter()
            .find(|g| g.info.index == index)
            .and_then(|g| g.reading.as_ref())
            .and_then(|r| r.energy_mj);
        match counter {
            Some(mj) => Some(mj as f64 / 1000.0),
            None => self.summed.get(&index).map(|s| s.0),
        }
    }

    fn account(
        &mut self,
        now: i64,
        runs: &[RunOnGpus],
        owner: &dyn Fn(u32) -> Option<i64>,
        fx: &mut ReadingEffects,
    ) {
        for run in runs {
            let state = self.runs.entry(run.run).or_insert_with(|| RunState {
                last_active: now,
                log_bytes: run.log_bytes,
                ..Default::default()
            });
            let mut active = run.log_bytes != state.log_bytes;
            state.log_bytes = run.log_bytes;
            for &index in &run.gpus {
                let Some(g) = self.gpus.iter().find(|g| g.info.index == index) else {
                    continue;
                };
                let Some(r) = g.reading.as_ref().filter(|_| g.healthy) else {
                    continue;
                };
                let mine: Vec<_> = r
                    .processes
                    .iter()
                    .filter(|p| owner(p.pid) == Some(run.run))
                    .collect();
                let here = runs.iter().filter(|o| o.gpus.contains(&index)).count();
                let alone = here == 1;
                let mem = if mine.is_empty() && alone && r.processes.is_empty() {
                    r.mem_used
                } else {
                    mine.iter().fold(0u64, |a, p| a.saturating_add(p.mem))
                };
                active |= r.util > 0;
                let acc = state.per_gpu.entry(index).or_insert_with(|| Acc {
                    uuid: g.info.uuid.clone(),
                    ..Default::default()
                });
                acc.samples += 1;
                acc.util_sum += r.util as u64;
                acc.util_max = acc.util_max.max(r.util);
                acc.mem_peak = acc.mem_peak.max(mem);
                acc.temp_max = acc.temp_max.max(r.temp_c);
                if let Some(c) = r.energy_mj {
                    acc.counter_first.get_or_insert(c);
                    acc.counter_last = Some(c);
                }
                if let Some(prev) = acc.last_at {
                    acc.power_mj +=
                        r.power_mw as f64 * now.saturating_sub(prev).max(0) as f64 / 1000.0;
                }
                acc.last_at = Some(now);
                let mine_mem = mine.iter().fold(0u64, |a, p| a.saturating_add(p.mem));
                let all_mem = (r.processes.iter()).fold(0u64, |a, p| a.saturating_add(p.mem));
                acc.share.add(
                    now,
                    r.energy_mj,
                    r.power_mw,
                    super::energy::share(mine_mem, all_mem, here),
                    self.tariff.as_ref(),
                );
                if acc
                    .last_series
                    .is_none_or(|t| now.saturating_sub(t) >= self.cfg.series_every_ms)
                {
                    acc.last_series = Some(now);
                    fx.series.push(SeriesPoint {
                        run: run.run,
                        at: now,
                        gpu: index,
                        util: r.util,
                        mem,
                        temp_c: r.temp_c,
                        power_mw: r.power_mw,
                    });
                }
            }
            if active {
                state.last_active = now;
                if state.stalled {
                    state.stalled = false;
                    fx.stall_changes.push((run.run, false));
                }
            } else if !state.stalled
                && now.saturating_sub(state.last_active) >= self.cfg.stall_after_ms
            {
                state.stalled = true;
                fx.stall_changes.push((run.run, true));
            }
        }
    }

    /// The run's GPU records, taken when it ends (empty for runs never seen).
    pub fn take_records(&mut self, run: i64) -> Vec<RunGpuRecord> {
        self.take_run(run).0
    }

    /// The run's GPU records and its share of their energy with its cost
    /// (none for runs never seen), taken when it ends.
    pub fn take_run(&mut self, run: i64) -> (Vec<RunGpuRecord>, Option<super::energy::RunEnergy>) {
        let Some(state) = self.runs.remove(&run) else {
            return (Vec::new(), None);
        };
        let energy = super::energy::run_energy(
            state.per_gpu.values().map(|a| &a.share),
            self.tariff.as_ref(),
        );
        let mut out: Vec<RunGpuRecord> = state
            .per_gpu
            .into_iter()
            .map(|(gpu, a)| {
                let (energy_j, source) = match (a.counter_first, a.counter_last) {
                    (Some(f), Some(l)) if a.samples > 1 => {
                        (l.saturating_sub(f) as f64 / 1000.0, "counter")
                    }
                    _ => (a.power_mj / 1000.0, "power"),
                };
                RunGpuRecord {
                    run,
                    gpu,
                    uuid: a.uuid,
                    samples: a.samples,
                    mem_peak: a.mem_peak,
                    util_mean: if a.samples > 0 {
                        a.util_sum as f64 / a.samples as f64
                    } else {
                        0.0
                    },
                    util_max: a.util_max,
                    temp_max: a.temp_max,
                    energy_j,
                    energy_source: source.to_string(),
                }
            })
            .collect();
        out.sort_by_key(|r| r.gpu);
        (out, energy)
    }
}

#[cfg(test)]
#[path = "monitor_tests.rs"]
mod tests;
