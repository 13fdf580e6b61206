//! `nightjar report`: what a period's runs did, used and cost, by project,
//! by user and by task name, with the series the charts of `--html` and
//! `--pdf` draw. The daemon computes it from its store; the CLI prints it as
//! a table, `--json` or `--csv`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `report [--since 7d | --from T --to T] [--html FILE | --pdf FILE]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Start of the period (Unix ms, inclusive): runs that ended at or after it.
    pub from: i64,
    /// End of the period (Unix ms, exclusive).
    pub to: i64,
    /// Also render the self-contained HTML report (`Accounting::html`).
    #[serde(default)]
    pub html: bool,
}

/// A period's accounting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    /// The period, as asked (Unix ms).
    pub from: i64,
    /// End of the period (exclusive).
    pub to: i64,
    /// When the daemon computed it.
    pub generated_at: i64,
    /// The daemon's IANA time zone: hours of day are in it.
    pub time_zone: String,
    /// The tariff's currency (`[tariff] currency`).
    pub currency: String,
    /// Every run of the period together (`key` is `all`).
    pub total: Group,
    /// One row per project, most costly first.
    pub by_project: Vec<Group>,
    /// One row per task owner; empty while the daemon serves one user.
    pub by_user: Vec<Group>,
    /// One row per task name, most costly first.
    pub by_task: Vec<Group>,
    /// What the charts draw.
    pub series: Series,
    /// The ten longest waits from submit to start, longest first.
    pub longest_waits: Vec<Wait>,
    /// The self-contained HTML report, when asked (`Report::html`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
}

/// The runs of one project, user or task name (or all of them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// The project, user or task name (`all` for the total).
    pub key: String,
    /// Runs that ended in the period.
    pub runs: u64,
    /// Those runs by end class (`succeeded`, `app-error`, `oom`, ...).
    pub outcomes: BTreeMap<String, u64>,
    /// GPU-hours: each run's GPU count times its duration.
    pub gpu_hours: f64,
    /// Median wait from submit to start, ms (none without runs).
    pub wait_p50_ms: Option<i64>,
    /// 95th percentile of that wait, ms.
    pub wait_p95_ms: Option<i64>,
    /// Energy used, kWh.
    pub energy_kwh: f64,
    /// Part of `energy_kwh` that is an estimate (CPU watts per core), kWh.
    pub estimated_kwh: f64,
    /// What it cost, in the report's currency.
    pub cost: f64,
    /// What the same runs would have cost had each started at submit (same
    /// duration, same average power, priced by the tariff then).
    pub cost_at_submit: f64,
    /// `cost_at_submit - cost`: what waiting for cheaper hours saved.
    pub savings: f64,
}

/// The series the charts draw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Width of one bucket of the time series, ms.
    pub bucket_ms: i64,
    /// Each GPU's mean utilisation per bucket.
    pub gpu_util: Vec<GpuUtil>,
    /// Tasks waiting in the queue at the start of each bucket: `(t, n)`.
    pub queue_len: Vec<(i64, u32)>,
    /// Energy used in each local hour of day (0 to 23), kWh, summed over the period.
    pub energy_by_hour: Vec<f64>,
    /// The tariff's mean price in each local hour of day over the period.
    pub price_by_hour: Vec<f64>,
    /// Ended runs that did not succeed, by class.
    pub failures: BTreeMap<String, u64>,
}

/// One GPU's utilisation over the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuUtil {
    /// The GPU's index.
    pub index: u32,
    /// Its model name.
    pub name: String,
    /// `(bucket start, mean utilisation %)`, buckets without samples left out.
    pub points: Vec<(i64, f64)>,
}

/// One long wait.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wait {
    /// The task.
    pub task: i64,
    /// Its name.
    pub name: String,
    /// Its project.
    pub project: String,
    /// From submit to its run's start, ms.
    pub waited_ms: i64,
    /// The last reason it was given for waiting, as `why` said it.
    pub why: Option<String>,
}
