//! `nightjar report`: what a period's runs did, used and cost, by project,
//! by user and by task name, with the series the charts of `--html` and
//! `--pdf` draw. The daemon computes it from its store; the CLI prints it as
//! a table, `--json` or `--csv`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `report [--since 7d | --from T --to T] [--html FILE | --pdf FILE]`: the
/// runs that ended in `[from, to)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Report {
    /// Start of the period (Unix ms, inclusive): runs that ended at or after
    /// it. At most `to` (equal: an empty period).
    pub from: i64,
    /// End of the period (Unix ms, exclusive).
    pub to: i64,
    /// Also render the self-contained HTML report (`Accounting::html`).
    #[serde(default)]
    pub html: bool,
}

/// A period's accounting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// One row per task owner: always empty for now, as tasks have no owner
    /// yet (a daemon serves one user until multi-user serving lands).
    pub by_user: Vec<Group>,
    /// One row per task name (the same name in two projects is one row),
    /// most costly first.
    pub by_task: Vec<Group>,
    /// What the charts draw.
    pub series: Series,
    /// The ten longest waits of the period's runs from ready to start, one
    /// per task, longest first (runs that did not wait are left out).
    pub longest_waits: Vec<Wait>,
    /// The self-contained HTML report, when asked (`Report::html`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
}

/// The runs of one project, user or task name (or all of them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Group {
    /// The project, user or task name (`all` for the total).
    pub key: String,
    /// Runs that ended in the period.
    pub runs: u64,
    /// Those runs by end class, as `ls` and `show` name them (`ok`,
    /// `app-error`, `gpu-oom`, ...; `unknown` for a row with none).
    pub outcomes: BTreeMap<String, u64>,
    /// GPU-hours: each run's GPU count times its duration (a run whose end
    /// is before its start, after a clock jump, counts 0).
    pub gpu_hours: f64,
    /// Median wait from ready to start, ms (none without runs). A run is
    /// ready at its task's submit, a retry at the end of its backoff, a
    /// dependant at its last dependency's end (`runs.eligible_at`).
    /// Percentiles are nearest-rank: the smallest wait with at least that
    /// share of the waits at or below it.
    pub wait_p50_ms: Option<i64>,
    /// 95th percentile of that wait, ms (nearest-rank; none without runs).
    pub wait_p95_ms: Option<i64>,
    /// Energy used, kWh (runs with no energy recorded count 0).
    pub energy_kwh: f64,
    /// Part of `energy_kwh` that is an estimate (CPU watts per core), kWh.
    pub estimated_kwh: f64,
    /// What it cost, in the report's currency: each run's stored cost, or,
    /// for a run without one (or in another currency), its energy at its
    /// mean power priced at the current tariff over its own time.
    pub cost: f64,
    /// What the same runs would have cost had each started when it was
    /// ready (see `wait_p50_ms`): `cost` plus, for each run, its mean power
    /// priced exactly over `[ready, ready + duration)` minus the same over
    /// `[start, end)`; a run that started when ready adds exactly 0.
    pub cost_at_submit: f64,
    /// `cost_at_submit - cost`: what waiting for cheaper hours saved.
    pub savings: f64,
}

/// The series the charts draw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Series {
    /// Width of one bucket of the time series, ms: a round width (1 min to
    /// 1 day, then whole days) giving the period at most 200 buckets, the
    /// first starting at `from`.
    pub bucket_ms: i64,
    /// Each GPU's mean utilisation per bucket, over the samples of its runs'
    /// stored series (`run_gpu_series`) in the bucket.
    pub gpu_util: Vec<GpuUtil>,
    /// Tasks waiting at the start of each bucket up to now: `(t, n)`. A task
    /// waits from its submit (or its last run's end) until its next run
    /// starts or it ends; held and blocked time counts.
    pub queue_len: Vec<(i64, u32)>,
    /// Energy used in each local hour of day (0 to 23), kWh, summed over the
    /// period's runs, each run's energy spread evenly over its duration.
    pub energy_by_hour: Vec<f64>,
    /// The tariff's time-weighted mean price in each local hour of day (0 to
    /// 23) over the period, widened to the week before its end when shorter
    /// and narrowed to its last 52 weeks when longer.
    pub price_by_hour: Vec<f64>,
    /// The period's runs that did not end `ok`, by class.
    pub failures: BTreeMap<String, u64>,
    /// The timeline: a bar per run and GPU it held, for the runs that ran
    /// in the period (those still running end now), by start; at most
    /// `MAX_TIMELINE` bars.
    #[serde(default)]
    pub timeline: Vec<TimelineBar>,
    /// Bars left out of `timeline` past its cap.
    #[serde(default)]
    pub timeline_left: u32,
    /// The period's spans of cheaper electricity (Unix ms): the tariff's
    /// windows priced under its base price.
    #[serde(default)]
    pub cheap: Vec<(i64, i64)>,
}

/// Most bars a report's timeline holds.
pub const MAX_TIMELINE: usize = 5_000;

/// One run on one GPU, for the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TimelineBar {
    /// The GPU's index.
    pub gpu: u32,
    /// The run's task.
    pub task: i64,
    /// Its project.
    pub project: String,
    /// Started (Unix ms).
    pub start: i64,
    /// Ended (now for a run still running).
    pub end: i64,
    /// How it ended (none: still running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
}

/// One GPU's utilisation over the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuUtil {
    /// The GPU's index.
    pub index: u32,
    /// Its model name (`GPU N` when the daemon does not see it now).
    pub name: String,
    /// `(bucket start, mean utilisation %)`, buckets without samples left out.
    pub points: Vec<(i64, f64)>,
}

/// One long wait.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Wait {
    /// The task.
    pub task: i64,
    /// Its name.
    pub name: String,
    /// Its project.
    pub project: String,
    /// From its run's ready time to its start, ms.
    pub waited_ms: i64,
    /// The last reason it was given for waiting, as `why` said it: its last
    /// `waiting`, `held` or `blocked` event in the wait, else the last
    /// deferring verdict a policy stored; none when none was recorded
    /// (waiting for a free GPU, or the event budget was spent).
    pub why: Option<String>,
}
