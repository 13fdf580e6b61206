//! The rows of a forecast (`forecast.rs`): each task's from its simulated
//! run, or (a task asked for that is not waiting) from where it is; why a
//! start is not known; its expected draw; and the words under it.

use anyhow::Result;
use nightjar_core::api::forecast::{Power, TaskForecast};

use super::forecast::Plan;
use crate::daemon::sim::UNKNOWN_MS;
use crate::daemon::state::Daemon;
use crate::store::TaskState;

/// Recorded runs a task's expected draw is the median of.
const POWER_RUNS: u32 = 10;

impl Daemon {
    /// One task's row from its simulated run (`None`: it never started,
    /// and the simulation's why, if it gave one).
    pub(super) fn row(
        &self,
        plan: &Plan,
        i: usize,
        (ran, never): (Option<&crate::daemon::sim::Ran>, Option<&str>),
        now: i64,
    ) -> Result<TaskForecast> {
        let job = &plan.jobs[i];
        let horizon = now.saturating_add(UNKNOWN_MS / 2);
        let start = ran.map(|r| r.start).filter(|&s| s < horizon);
        let end = ran
            .map(|r| r.end)
            .filter(|&e| e < horizon && start.is_some());
        let unknown = match (start, end) {
            (None, _) => Some(why_unknown(plan, i, never)),
            (Some(_), None) => Some("no runtime estimate for the task itself".into()),
            _ => None,
        };
        let power = self.expected_power(&job.name, &job.project, job.gpus)?;
        let tariff = self.cfg.tariff();
        let priced = tariff.price > 0.0 || !tariff.windows.is_empty();
        let span = start.zip(end);
        let energy_kwh = span
            .zip(power)
            .map(|((s, e), p)| p.watts * (e - s) as f64 / 3.6e9);
        let cost = span
            .zip(power)
            .filter(|_| priced)
            .map(|((s, e), p)| tariff.cost_spanned(s, e, p.watts));
        Ok(TaskForecast {
            id: plan.task[i],
            name: job.name.to_string(),
            state: if plan.task[i].is_some() {
                "queued"
            } else {
                "not queued"
            }
            .into(),
            start,
            end,
            gpus: ran.map(|r| r.gpus.clone()).unwrap_or_default(),
            estimate: plan.estimates[i].clone(),
            power,
            energy_kwh,
            cost,
            currency: cost.map(|_| tariff.currency.clone()),
            unknown,
        })
    }

    /// The row of a task asked for (`d`, as `show` reads it) that is not
    /// waiting in the queue.
    pub(super) fn not_waiting(
        &self,
        d: nightjar_core::api::wire::TaskDetail,
    ) -> Result<TaskForecast> {
        let t = &d.task;
        let estimate = self.estimate(&d.spec);
        let (start, end, unknown) = match t.state {
            TaskState::Running => {
                let run = d.runs.last();
                let start = run.map(|r| r.started_at);
                let end = start.zip(estimate.as_ref()).map(|(s, e)| s.saturating_add(e.ms));
                (start, end, None)
            }
            TaskState::Held => (None, None, Some("held: `nightjar release` lets it start".into())),
            TaskState::Queued if !d.deps.iter().all(|dep| dep.state == TaskState::Succeeded) => (
                None,
                None,
                Some("it waits for its dependencies (`nightjar why` lists them); their ends are not forecast".into()),
            ),
            s if s.is_final() => (
                d.runs.last().map(|r| r.started_at),
                d.runs.last().and_then(|r| r.finished_at),
                Some(format!("already {}", s.as_str())),
            ),
            s => (None, None, Some(format!("{}: not a task waiting to start", s.as_str()))),
        };
        Ok(TaskForecast {
            id: Some(t.id),
            name: t.name.clone(),
            state: t.state.as_str().to_string(),
            start,
            end,
            gpus: (d.runs.last().and_then(|r| r.gpus.as_deref()))
                .map(|g| g.split(',').filter_map(|x| x.parse().ok()).collect())
                .unwrap_or_default(),
            estimate,
            power: self.expected_power(&t.name, &t.project, d.spec.resources.gpus)?,
            energy_kwh: None,
            cost: None,
            currency: None,
            unknown,
        })
    }

    /// The expected draw of a run of `name` in `project` on `gpus` GPUs:
    /// the median per GPU of its name's recorded runs.
    pub(crate) fn expected_power(
        &self,
        name: &str,
        project: &str,
        gpus: u32,
    ) -> Result<Option<Power>> {
        let watts = self.store().recent_power(name, project, POWER_RUNS)?;
        Ok(median(&watts).map(|w| Power {
            watts: w * f64::from(gpus.max(1)),
            runs: watts.len() as u32,
        }))
    }

    /// The order a forecast plays: the chain's members, or the built-in one.
    pub(super) fn order_words(&self) -> String {
        let rule = match self.cfg.scheduler.order() {
            crate::config::Order::Backfill => "EASY backfill",
            crate::config::Order::FirstFit => "first fit",
            crate::config::Order::Strict => "strict order",
        };
        if self.cfg.plugins.chain.is_empty() {
            format!("built-in order (priority, then submit time), {rule}")
        } else {
            format!(
                "policy chain {}, {rule}",
                self.cfg.plugins.chain.join(" -> ")
            )
        }
    }

    /// What the config turns on that a forecast does not play.
    pub(super) fn not_modelled(&self) -> Vec<String> {
        vec!["GPU temperatures after now (modelled 35 °C idle, 65 °C busy)".to_string()]
    }
}

/// Why job `i` has no expected start: the simulation's why (the machine
/// can never hold it; a policy deferred it past what a forecast follows),
/// or else the runs of unknown length it waits behind.
fn why_unknown(plan: &Plan, i: usize, never: Option<&str>) -> String {
    if let Some(why) = never.filter(|w| !w.starts_with(crate::daemon::sim::LEFT_WAITING)) {
        return why.to_string();
    }
    let blind: Vec<String> = (0..plan.jobs.len())
        .filter(|&k| k != i && !plan.known[k])
        .filter_map(|k| plan.task[k].map(|t| t.to_string()))
        .take(5)
        .collect();
    if !blind.is_empty() {
        return format!(
            "it waits for GPUs that tasks whose end is not known hold or will take (task {}: no timeout and no successful run of its name, or a timeout longer than any forecast): give them a `timeout` to forecast past them",
            blind.join(", ")
        );
    }
    "it did not start in the simulation (deferred or closed by a policy, or the machine can never hold it)".into()
}

/// The median of `xs` (none for none).
fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}
