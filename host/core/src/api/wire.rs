//! The tasks, runs and events as the daemon hands them out (`ls`, `show`,
//! `wait`, `gc`): wire types, owned by the protocol.

use serde::{Deserialize, Serialize};

use crate::task::model::{DepKind, TaskSpec};

pub use super::class::RunClass;
pub use super::figures::{fixed, fmt_amount, fmt_cost, fmt_energy};
pub use super::gc::GcReport;
pub use super::state::{TaskKind, TaskState};

/// Member counts of a sweep, by state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Counts {
    /// Members in all.
    pub total: u32,
    /// Waiting (queued or held).
    pub waiting: u32,
    /// Running.
    pub running: u32,
    /// Succeeded.
    pub succeeded: u32,
    /// Failed.
    pub failed: u32,
    /// Blocked.
    pub blocked: u32,
    /// Cancelled.
    pub cancelled: u32,
}

impl Counts {
    /// `3 running, 2 waiting, 1 succeeded`: the states with members.
    pub fn summary(&self) -> String {
        let parts = [
            (self.running, "running"),
            (self.waiting, "waiting"),
            (self.succeeded, "succeeded"),
            (self.failed, "failed"),
            (self.blocked, "blocked"),
            (self.cancelled, "cancelled"),
        ];
        parts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, s)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One task as `ls` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskRow {
    /// Task id.
    pub id: i64,
    /// A task, a sweep or a recurring template.
    pub kind: TaskKind,
    /// The sweep or recurring template this task belongs to.
    pub parent_id: Option<i64>,
    /// Name.
    pub name: String,
    /// Project.
    pub project: String,
    /// low, normal, high, urgent.
    pub priority: String,
    /// State.
    pub state: TaskState,
    /// Why it is in that state, where there is a reason.
    pub reason: Option<String>,
    /// Submitted (Unix ms).
    pub submitted_at: i64,
    /// First became eligible to start (Unix ms).
    pub eligible_at: Option<i64>,
    /// Ended (Unix ms).
    pub finished_at: Option<i64>,
    /// Attempts made in this round.
    pub attempts: i64,
    /// Next firing of a recurring template.
    pub next_fire_at: Option<i64>,
    /// The command, for display.
    pub command: String,
    /// Who submitted it (the user's name; absent from tasks older than
    /// nightjar 0.5, which belong to the daemon's user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The submitter's uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_uid: Option<u32>,
    /// Member counts, for sweeps.
    pub counts: Option<Counts>,
    /// Since when its running run is stalled, if it is.
    pub stalled_at: Option<i64>,
    /// When a retry may start (Unix ms), while the task waits out a backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<i64>,
    /// Energy of all its runs so far, joules (absent from older daemons).
    #[serde(default)]
    pub energy_j: Option<f64>,
    /// What they cost, in `currency`.
    #[serde(default)]
    pub cost: Option<f64>,
    /// The tariff's currency.
    #[serde(default)]
    pub currency: Option<String>,
}

/// One run (attempt) of a task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunRow {
    /// Run id.
    pub id: i64,
    /// Task id.
    pub task_id: i64,
    /// Attempt number, from 1.
    pub attempt: i64,
    /// `running` or `finished`.
    pub state: String,
    /// The run's folder (spec, logs, status).
    pub run_dir: String,
    /// Supervisor process id.
    pub supervisor_pid: Option<i64>,
    /// Task submitted (Unix ms).
    pub submitted_at: i64,
    /// Became eligible (Unix ms).
    pub eligible_at: i64,
    /// Started (Unix ms).
    pub started_at: i64,
    /// Ended (Unix ms).
    pub finished_at: Option<i64>,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Killing signal.
    pub signal: Option<i32>,
    /// Outcome class.
    pub class: Option<RunClass>,
    /// Explanation.
    pub message: Option<String>,
    /// GPU indices given.
    pub gpus: Option<String>,
    /// CPU cores pinned to.
    pub cpus: Option<String>,
    /// What the sandbox could and could not enforce.
    pub sandbox_note: Option<String>,
    /// Since when the run shows no sign of life (GPU runs only).
    pub stalled_at: Option<i64>,
    /// What the task's validators found in its outputs (runs that exited 0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<super::findings::Finding>,
    /// The checkpoint this attempt resumed from (absent from older daemons).
    #[serde(default)]
    pub checkpoint: Option<String>,
    /// Its output manifest, archive and retention (absent from older daemons).
    #[serde(default)]
    pub outputs: super::outputs::RunOutputs,
    /// Its energy and cost, once it ended (absent from older daemons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<RunEnergy>,
    /// The `NIGHTJAR_SEED` it got (absent from older daemons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The earlier run it was completed from by the result cache (it did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_from: Option<i64>,
}

/// A run's energy and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunEnergy {
    /// Joules: the run's share of its GPUs' energy, or its CPU energy.
    pub energy_j: f64,
    /// `counter` (GPU energy counters), `integrated` (GPU power over the
    /// samples), `rapl` (CPU package counters) or `estimate` (watts per core).
    pub source: String,
    /// Energy times the price in force at each sample (none without a tariff).
    pub cost: Option<f64>,
    /// The tariff's currency.
    pub currency: Option<String>,
}

impl RunEnergy {
    /// `0.42 kWh (counter), cost 0.25 CNY`.
    pub fn summary(&self) -> String {
        let mut s = format!("{} ({})", fmt_energy(self.energy_j), self.source);
        if let Some(c) = self.cost {
            s.push_str(&format!(
                ", cost {} {}",
                fmt_cost(c),
                self.currency.as_deref().unwrap_or("")
            ));
        }
        s
    }
}

/// A dependency edge as `show` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DepRow {
    /// The task depended on.
    pub dep_id: i64,
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: TaskState,
    /// after-ok or after-any.
    pub kind: DepKind,
}

/// One recorded event.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EventRow {
    /// When (Unix ms).
    pub at: i64,
    /// Run, if any.
    pub run_id: Option<i64>,
    /// Short kind (`submitted`, `started`, `finished`, ...).
    pub kind: String,
    /// What happened.
    pub message: String,
}

/// Everything `show` prints about a task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskDetail {
    /// The row.
    pub task: TaskRow,
    /// The stored spec.
    pub spec: TaskSpec,
    /// Its dependencies.
    pub deps: Vec<DepRow>,
    /// Its runs, oldest first.
    pub runs: Vec<RunRow>,
    /// Members of a sweep or instances of a recurring template.
    pub members: Vec<TaskRow>,
    /// Its events, oldest first.
    pub events: Vec<EventRow>,
    /// GPU records of its runs (one per run and GPU).
    pub gpu_records: Vec<RunGpuRecord>,
    /// A recurring template's schedule and the zone it is read in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleInfo>,
    /// What was asked at submit and what each run ran (`show --manifest`).
    #[serde(default)]
    pub manifests: super::manifest::Manifests,
    /// How long it is expected to run (its timeout, or its name's history),
    /// as backfill uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<super::estimate::Estimate>,
}

/// A recurring template's schedule as written, and the time zone its wall
/// times are read in (the daemon's `timezone`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ScheduleInfo {
    /// As written: `daily@03:00`, a cron line, ...
    pub expr: String,
    /// IANA zone name.
    pub timezone: String,
    /// The next firing as wall time in that zone, zone named
    /// (`2026-12-01 03:00 Asia/Shanghai`).
    #[serde(default)]
    pub next_there: Option<String>,
}

/// The GPU record of one run on one GPU, stored when the run ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunGpuRecord {
    /// Run id.
    pub run: i64,
    /// GPU index.
    pub gpu: u32,
    /// GPU UUID.
    pub uuid: String,
    /// Rounds of GPU readings that saw the run.
    pub samples: u32,
    /// Peak GPU memory of the run's processes (the GPU's used memory when
    /// the driver lists no processes and the run has the GPU alone), bytes.
    pub mem_peak: u64,
    /// Mean GPU utilisation, percent.
    pub util_mean: f64,
    /// Max GPU utilisation, percent.
    pub util_max: u32,
    /// Max temperature, °C.
    pub temp_max: u32,
    /// Energy, joules.
    pub energy_j: f64,
    /// `counter` (the GPU's energy counter) or `power` (power integrated over time).
    pub energy_source: String,
}

/// Which tasks `ls` lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ListFilter {
    /// Only this state.
    pub state: Option<TaskState>,
    /// Only this project.
    pub project: Option<String>,
    /// Include tasks that ended before `since`.
    pub all: bool,
    /// With `all` false: ended tasks are listed when they ended after this (Unix ms).
    pub since: i64,
    /// Only tasks of this user (a name; tasks from before owners are the daemon user's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}
