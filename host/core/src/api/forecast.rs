//! `nightjar estimate` (the `forecast` verb): when waiting tasks are
//! expected to start and end, on which GPUs, and what their energy is
//! expected to cost, from simulating the live queue forward. (A task's
//! *estimate* is its expected runtime, `estimate.rs`; its *forecast* is
//! where the queue is expected to put it.)

use serde::{Deserialize, Serialize};

use super::estimate::Estimate;
use super::wire::{fmt_cost, fmt_energy};
use crate::task::model::NewEntry;
use crate::time::{fmt_local, fmt_span};

/// `forecast`: the waiting tasks named, a task not yet queued, or (neither)
/// every waiting task.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Forecast {
    /// Tasks to forecast (queued, held or waiting on dependencies; a
    /// sweep's id stands for its members).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<i64>,
    /// A submission not queued (`submit --dry-run`): forecast as if
    /// submitted now by the caller, checked as `submit` checks it, and
    /// never stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<NewEntry>,
    /// An add-on to another verb's output (the expected start `show`,
    /// `why` and `ls --wide` print): waits at most a moment for its turn
    /// behind other forecasts, else is refused as busy, so those verbs
    /// never queue behind everyone's `estimate`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub brief: bool,
}

/// The forecast: one row per task asked about, and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ForecastReport {
    /// When it was made (Unix ms).
    pub now: i64,
    /// The order it simulated: the policy chain's members, or the built-in
    /// order; and the backfill rule.
    pub order: String,
    /// What the daemon does that the forecast does not model, as set in
    /// its config (`[quotas]`, preemption, ...): the forecast may be off by it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_modelled: Vec<String>,
    /// The tasks, in the order asked (every waiting task: by expected start).
    pub tasks: Vec<TaskForecast>,
    /// Scheduling passes the forecast played.
    #[serde(default)]
    pub passes: u64,
    /// Of those, the passes that asked the policy chain.
    #[serde(default)]
    pub chain_passes: u64,
}

/// One task's forecast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskForecast {
    /// The task (`None`: the submission not queued).
    pub id: Option<i64>,
    /// Its name.
    pub name: String,
    /// Its state now (`queued`, `held`, `running`, ...).
    pub state: String,
    /// Expected start (Unix ms); `None`: not known (`unknown` says why).
    pub start: Option<i64>,
    /// Expected end; `None` where the start or the runtime is not known.
    pub end: Option<i64>,
    /// The GPUs it is expected to start on.
    #[serde(default)]
    pub gpus: Vec<u32>,
    /// Its runtime estimate and what it rests on (`None`: none; no timeout
    /// and no successful run of its name yet).
    pub estimate: Option<Estimate>,
    /// Expected mean draw of the whole run, watts (the median per GPU of
    /// its name's recorded runs, times the GPUs it asks for), and how many
    /// runs that rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<Power>,
    /// Expected energy, kWh (where the run's span and draw are known).
    pub energy_kwh: Option<f64>,
    /// Expected cost at the tariff (where the energy is known and a tariff is set).
    pub cost: Option<f64>,
    /// The tariff's currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Why the start or end is not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
}

/// A run's expected draw.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Power {
    /// Watts (the whole run: every GPU it holds).
    pub watts: f64,
    /// How many recorded runs of its name the median is of.
    pub runs: u32,
}

impl TaskForecast {
    /// Whether the row says what happened (a task running or ended, asked
    /// for by id), not what is expected.
    pub fn happened(&self) -> bool {
        self.start.is_some() && !matches!(self.state.as_str(), "queued" | "not queued")
    }

    /// `start 03:12 (in 2h10m)`, `start unknown: why`, or (a task running
    /// or ended) when it started.
    pub fn start_text(&self, now: i64) -> String {
        match self.start {
            Some(at) if self.happened() => format!(
                "started        {} ({} ago)",
                fmt_local(at),
                fmt_span(now.saturating_sub(at).max(0))
            ),
            Some(at) if at <= now => "starts at the next pass (now)".to_string(),
            Some(at) => format!(
                "expected start {} (in {})",
                fmt_local(at),
                fmt_span(at - now)
            ),
            None => format!(
                "expected start unknown: {}",
                self.unknown.as_deref().unwrap_or("not known")
            ),
        }
    }

    /// The short ETA `ls --wide` prints: `in 2h10m`, `now`, or `?`.
    pub fn eta(&self, now: i64) -> String {
        match self.start {
            Some(at) if at <= now => "now".into(),
            Some(at) => format!("in {}", fmt_span(at - now)),
            None => "?".into(),
        }
    }

    /// What `nightjar estimate` prints for the task.
    pub fn lines(&self, now: i64) -> Vec<String> {
        let who = match self.id {
            Some(id) => format!("task {id} ({}, {})", self.name, self.state),
            None => format!("task {} (not queued: --dry-run)", self.name),
        };
        let mut out = vec![who, format!("  {}", self.start_text(now))];
        if self.happened() && self.state != "running" {
            // An ended task: when it ended, not an estimate; `show` has the rest.
            out.push(match self.end {
                Some(end) => format!("  ended          {} ({})", fmt_local(end), self.state),
                None => format!("  ended          ({})", self.state),
            });
            return out;
        }
        match (self.end, &self.estimate) {
            (Some(end), Some(e)) => out.push(format!(
                "  expected end   {} (runtime {})",
                fmt_local(end),
                e.summary()
            )),
            (None, Some(e)) => out.push(format!("  expected end   unknown (runtime {})", e.summary())),
            (_, None) => out.push(
                "  expected end   unknown: no runtime estimate (no timeout, no successful run of its name yet)"
                    .into(),
            ),
        }
        if !self.gpus.is_empty() {
            let ids: Vec<String> = self.gpus.iter().map(u32::to_string).collect();
            out.push(format!("  on GPUs        {}", ids.join(", ")));
        }
        if self.happened() {
            // A run in progress: its energy so far is `show`'s.
            return out;
        }
        out.push(match (self.energy_kwh, &self.power) {
            (Some(kwh), Some(p)) => format!(
                "  energy         {} ({:.0} W, median of {} run{}){}",
                fmt_energy(kwh * 3.6e6),
                p.watts,
                p.runs,
                if p.runs == 1 { "" } else { "s" },
                match (self.cost, &self.currency) {
                    (Some(c), Some(cur)) => format!(", cost {} {cur}", fmt_cost(c)),
                    (Some(c), None) => format!(", cost {}", fmt_cost(c)),
                    _ => String::new(),
                }
            ),
            (None, Some(p)) => format!(
                "  energy         unknown ({:.0} W, but the run's span is not known)",
                p.watts
            ),
            (_, None) => "  energy         unknown: no recorded energy for runs of its name".into(),
        });
        out
    }
}

impl ForecastReport {
    /// The lines `nightjar estimate ID` prints (each escaped on its own by
    /// the client: a name may hold a newline).
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.tasks.iter().flat_map(|t| t.lines(self.now)).collect();
        let mut foot = format!("simulated: {}", self.order);
        if !self.not_modelled.is_empty() {
            foot.push_str(&format!("; not modelled: {}", self.not_modelled.join(", ")));
        }
        out.push(foot);
        out
    }

    /// The whole text, a line each.
    pub fn text(&self) -> String {
        self.lines().iter().map(|l| format!("{l}\n")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(state: &str, start: Option<i64>, end: Option<i64>) -> TaskForecast {
        TaskForecast {
            id: Some(1),
            name: "t".into(),
            state: state.into(),
            start,
            end,
            gpus: vec![0],
            estimate: None,
            power: None,
            energy_kwh: None,
            cost: None,
            currency: None,
            unknown: None,
        }
    }

    #[test]
    fn a_running_or_ended_task_says_when_it_started_not_that_it_starts_now() {
        let now = 10 * 60_000;
        let running = row("running", Some(60_000), None).lines(now).join("\n");
        assert!(
            running.contains("started ") && running.contains("(9m"),
            "{running}"
        );
        assert!(!running.contains("next pass"), "{running}");
        assert!(
            !running.contains("energy"),
            "show has its energy: {running}"
        );
        let ended = row("succeeded", Some(60_000), Some(120_000))
            .lines(now)
            .join("\n");
        assert!(
            ended.contains("started ") && ended.contains("ended "),
            "{ended}"
        );
        assert!(ended.contains("(succeeded)"), "{ended}");
        assert!(
            !ended.contains("next pass") && !ended.contains("expected"),
            "{ended}"
        );
        // A waiting task's start that has come is still the next pass.
        let due = row("queued", Some(now), None).lines(now).join("\n");
        assert!(due.contains("starts at the next pass (now)"), "{due}");
        assert!(due.contains("energy"), "{due}");
    }
}
