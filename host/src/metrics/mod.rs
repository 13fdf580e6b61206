//! The daemon's Prometheus metrics (`GET /metrics`, `[http] metrics`):
//! what is counted as it happens (runs ended, the scheduler's passes, the
//! plugins' calls), kept here, and what is read at each scrape (tasks by
//! state, the GPUs' readings, the outbox, the archive's backlog), handed in
//! as a [`Reading`]. Written as OpenMetrics text by `prometheus-client`.
//!
//! Label values come from users (project names) and from GPUs (their
//! names): each is escaped as the format asks (the client crate writes
//! them as given), and a label may take at most [`MAX_PROJECTS`] values,
//! the rest counted under `(other)`, so no one can flood the scrape.

mod labels;
#[cfg(test)]
mod tests;

use std::sync::Mutex;

use crate::sync::LockUnpoisoned;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use labels::{Cap, GpuLabels, PluginLabels, RunLabels, TaskLabels, Value};

/// Most project values a metric's label takes; the rest are `(other)`.
pub const MAX_PROJECTS: usize = 100;

/// Most plugin values the call histogram's label takes.
const MAX_PLUGINS: usize = 64;

/// The OpenMetrics text's content type.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// A histogram of durations from 0.5 ms to about 16 s.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// The metrics counted as things happen.
pub struct Metrics {
    runs_ended: Family<RunLabels, Counter>,
    /// The projects the run counter has a value for (capped).
    run_projects: Mutex<Cap>,
    pass: Histogram,
    plugin_calls: Family<PluginLabels, Histogram, fn() -> Histogram>,
    plugins: Mutex<Cap>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            runs_ended: Family::default(),
            run_projects: Mutex::new(Cap::new(MAX_PROJECTS)),
            pass: seconds(),
            plugin_calls: Family::new_with_constructor(seconds),
            plugins: Mutex::new(Cap::new(MAX_PLUGINS)),
        }
    }
}

/// What is read at each scrape.
#[derive(Debug, Default, Clone)]
pub struct Reading {
    /// Tasks by (state, project): how many.
    pub tasks: Vec<(String, String, u64)>,
    /// The GPUs.
    pub gpus: Vec<GpuReading>,
    /// Notification deliveries waiting to be sent.
    pub outbox_pending: u64,
    /// Notification deliveries given up on (dead letters).
    pub outbox_dead: u64,
    /// Finished runs whose outputs wait to be archived.
    pub archive_backlog: u64,
}

/// One GPU's latest reading.
#[derive(Debug, Default, Clone)]
pub struct GpuReading {
    /// Its index.
    pub index: u32,
    /// Its UUID (empty when unmonitored).
    pub uuid: String,
    /// Its model.
    pub name: String,
    /// Utilisation, 0 to 1.
    pub util: Option<f64>,
    /// Memory used, bytes.
    pub mem_used: Option<u64>,
    /// Memory in all, bytes.
    pub mem_total: Option<u64>,
    /// Temperature, °C.
    pub temp_c: Option<u32>,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// Energy used since the daemon (or the driver) began counting, J.
    pub energy_j: Option<f64>,
}

impl Metrics {
    /// A run ended with `class` (`ok`, `app-error`, ...) in `project`.
    pub fn run_ended(&self, class: &str, project: &str) {
        let project = self.run_projects.lock_unpoisoned().admit(project);
        self.runs_ended
            .get_or_create(&RunLabels {
                class: Value::of(class),
                project,
            })
            .inc();
    }

    /// A scheduling pass took `d`.
    pub fn pass_took(&self, d: Duration) {
        self.pass.observe(d.as_secs_f64());
    }

    /// A call of `plugin` took `d`.
    pub fn plugin_call_took(&self, plugin: &str, d: Duration) {
        let plugin = self.plugins.lock_unpoisoned().admit(plugin);
        self.plugin_calls
            .get_or_create(&PluginLabels { plugin })
            .observe(d.as_secs_f64());
    }

    /// The metrics with `now`'s readings, as OpenMetrics text.
    pub fn render(&self, now: &Reading) -> Result<String, std::fmt::Error> {
        let mut r = Registry::with_prefix("nightjar");
        r.register(
            "runs_ended",
            "Runs ended, by class and project (since the daemon started)",
            self.runs_ended.clone(),
        );
        r.register_with_unit(
            "pass_duration",
            "How long a scheduling pass took",
            Unit::Seconds,
            self.pass.clone(),
        );
        r.register_with_unit(
            "plugin_call_duration",
            "How long one call of a policy plugin took",
            Unit::Seconds,
            self.plugin_calls.clone(),
        );
        register_tasks(&mut r, now);
        register_gpus(&mut r, now);
        let gauge = |v: u64| {
            let g = Gauge::<i64>::default();
            g.set(i64::try_from(v).unwrap_or(i64::MAX));
            g
        };
        r.register(
            "outbox_pending",
            "Notification deliveries waiting to be sent",
            gauge(now.outbox_pending),
        );
        r.register(
            "outbox_dead",
            "Notification deliveries given up on (dead letters)",
            gauge(now.outbox_dead),
        );
        r.register(
            "archive_backlog",
            "Finished runs whose outputs wait to be archived",
            gauge(now.archive_backlog),
        );
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r)?;
        Ok(out)
    }
}

/// `nightjar_tasks{state,project}`, at most [`MAX_PROJECTS`] projects.
fn register_tasks(r: &mut Registry, now: &Reading) {
    let tasks = Family::<TaskLabels, Gauge>::default();
    let mut cap = Cap::new(MAX_PROJECTS);
    // The largest projects keep their names.
    let mut rows: Vec<&(String, String, u64)> = now.tasks.iter().collect();
    rows.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.1.cmp(&b.1)));
    for (state, project, n) in rows {
        let labels = TaskLabels {
            state: Value::of(state),
            project: cap.admit(project),
        };
        tasks
            .get_or_create(&labels)
            .inc_by(i64::try_from(*n).unwrap_or(i64::MAX));
    }
    r.register("tasks", "Tasks by state and project", tasks);
}

/// The GPUs' readings, one series per GPU.
fn register_gpus(r: &mut Registry, now: &Reading) {
    let util = Family::<GpuLabels, FloatGauge>::default();
    let mem_used = Family::<GpuLabels, Gauge>::default();
    let mem_total = Family::<GpuLabels, Gauge>::default();
    let temp = Family::<GpuLabels, Gauge>::default();
    let power = Family::<GpuLabels, FloatGauge>::default();
    let energy = Family::<GpuLabels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
    let bytes = |b: u64| i64::try_from(b).unwrap_or(i64::MAX);
    for g in &now.gpus {
        let l = GpuLabels::of(g.index, &g.uuid, &g.name);
        if let Some(u) = g.util.filter(|u| u.is_finite()) {
            util.get_or_create(&l).set(u);
        }
        if let Some(m) = g.mem_used {
            mem_used.get_or_create(&l).set(bytes(m));
        }
        if let Some(m) = g.mem_total {
            mem_total.get_or_create(&l).set(bytes(m));
        }
        if let Some(t) = g.temp_c {
            temp.get_or_create(&l).set(i64::from(t));
        }
        if let Some(p) = g.power_w.filter(|p| p.is_finite()) {
            power.get_or_create(&l).set(p);
        }
        if let Some(e) = g.energy_j.filter(|e| e.is_finite() && *e >= 0.0) {
            energy.get_or_create(&l).inc_by(e);
        }
    }
    r.register_with_unit(
        "gpu_utilization",
        "GPU utilisation",
        Unit::Other("ratio".into()),
        util,
    );
    r.register_with_unit(
        "gpu_memory_used",
        "GPU memory used (all processes)",
        Unit::Bytes,
        mem_used,
    );
    r.register_with_unit(
        "gpu_memory_total",
        "GPU memory in all",
        Unit::Bytes,
        mem_total,
    );
    r.register_with_unit("gpu_temperature", "GPU temperature", Unit::Celsius, temp);
    r.register_with_unit(
        "gpu_power",
        "GPU power draw",
        Unit::Other("watts".into()),
        power,
    );
    r.register_with_unit(
        "gpu_energy",
        "GPU energy used since counting began (the driver's counter where the GPU has one, else the daemon's sum of its power readings)",
        Unit::Joules,
        energy,
    );
}
