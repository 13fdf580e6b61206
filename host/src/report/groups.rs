//! One run's figures (duration, wait, GPU-hours, energy, cost, what it
//! would have cost at its ready time) and their sums by group.

use std::collections::{BTreeMap, HashMap};

use nightjar_core::api::report::Group;

use super::clock::{HOUR_MS, PriceLine};
use crate::store::ReportRun;
use crate::tariff::{J_PER_KWH, Tariff};

/// What one run of the period counts for.
#[derive(Debug, Clone)]
pub struct RunFigures<'a> {
    /// The run.
    pub run: &'a ReportRun,
    /// Its end class (`unknown` if the row has none).
    pub class: &'a str,
    /// When it became ready: `runs.eligible_at` (submit for a first
    /// attempt, the end of the backoff for a retry, the last dependency's
    /// end for a dependant), at most its start.
    pub ready: i64,
    /// Its end, never before its start (a clock that jumped back gives 0 ms).
    pub end: i64,
    /// From ready to start, ms.
    pub wait_ms: i64,
    /// GPU count times duration, hours.
    pub gpu_hours: f64,
    /// Energy, kWh (0 when the row has none).
    pub kwh: f64,
    /// The part of it that is an estimate, kWh.
    pub estimated_kwh: f64,
    /// What it cost.
    pub cost: f64,
    /// What it would have cost started at `ready`.
    pub cost_at_submit: f64,
}

/// The figures of a run that ended at `finished`. Its cost is the stored
/// one when it is in the tariff's currency, else its energy priced at its
/// own times at the current tariff (mean power, exact spans). What it
/// would have cost at its ready time is that cost plus the difference
/// between the same mean power priced over `[ready, ready + duration)` and
/// over `[start, end)`: a run that started when it was ready saved nothing,
/// exactly, whatever the shape of its power draw.
pub fn figures<'a>(
    run: &'a ReportRun,
    finished: i64,
    tariff: &Tariff,
    line: &PriceLine,
) -> RunFigures<'a> {
    let start = run.started_at;
    let end = finished.max(start);
    let ready = run.eligible_at.min(start);
    let dur = end - start;
    let joules = run.energy_j.filter(|j| j.is_finite() && *j >= 0.0);
    let kwh = joules.unwrap_or(0.0) / J_PER_KWH;
    let priced_at =
        |a: i64| joules.map_or(0.0, |j| line.cost_of_energy(a, a.saturating_add(dur), j));
    let here = priced_at(start);
    let cost = match (run.cost, &run.currency) {
        (Some(c), Some(cur)) if *cur == tariff.currency && c.is_finite() => c,
        _ => here,
    };
    let savings = priced_at(ready) - here;
    RunFigures {
        run,
        class: run.class.as_deref().unwrap_or("unknown"),
        ready,
        end,
        wait_ms: start - ready,
        gpu_hours: run.gpus as f64 * dur as f64 / HOUR_MS as f64,
        kwh,
        estimated_kwh: if run.energy_source.as_deref() == Some("estimate") {
            kwh
        } else {
            0.0
        },
        cost,
        cost_at_submit: cost + savings,
    }
}

/// The nearest-rank percentile `p` (0 < p <= 100) of ascending `sorted`:
/// the smallest value with at least p% of the values at or below it
/// (`sorted[ceil(p / 100 * n) - 1]`); none of nothing.
pub fn percentile(sorted: &[i64], p: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// A group's sums while they are added up.
#[derive(Debug, Default)]
struct Acc {
    runs: u64,
    outcomes: BTreeMap<String, u64>,
    gpu_hours: f64,
    waits: Vec<i64>,
    kwh: f64,
    estimated_kwh: f64,
    cost: f64,
    cost_at_submit: f64,
}

impl Acc {
    fn add(&mut self, f: &RunFigures) {
        self.runs += 1;
        *self.outcomes.entry(f.class.to_string()).or_default() += 1;
        self.gpu_hours += f.gpu_hours;
        self.waits.push(f.wait_ms);
        self.kwh += f.kwh;
        self.estimated_kwh += f.estimated_kwh;
        self.cost += f.cost;
        self.cost_at_submit += f.cost_at_submit;
    }

    fn group(mut self, key: String) -> Group {
        self.waits.sort_unstable();
        Group {
            key,
            runs: self.runs,
            outcomes: self.outcomes,
            gpu_hours: self.gpu_hours,
            wait_p50_ms: percentile(&self.waits, 50.0),
            wait_p95_ms: percentile(&self.waits, 95.0),
            energy_kwh: self.kwh,
            estimated_kwh: self.estimated_kwh,
            cost: self.cost,
            cost_at_submit: self.cost_at_submit,
            savings: self.cost_at_submit - self.cost,
        }
    }
}

/// Every run together (`all`), by project and by task name (a name used
/// in two projects is one row), each list most costly first, then by key.
pub fn groups(figs: &[RunFigures]) -> Groups {
    let mut all = Acc::default();
    let mut by_project: HashMap<&str, Acc> = HashMap::new();
    let mut by_task: HashMap<&str, Acc> = HashMap::new();
    let mut by_user: HashMap<&str, Acc> = HashMap::new();
    for f in figs {
        all.add(f);
        by_project.entry(&f.run.project).or_default().add(f);
        by_task.entry(&f.run.name).or_default().add(f);
        by_user.entry(&f.run.owner).or_default().add(f);
    }
    let sorted = |m: HashMap<&str, Acc>| {
        let mut v: Vec<Group> = m.into_iter().map(|(k, a)| a.group(k.to_string())).collect();
        v.sort_by(|a, b| b.cost.total_cmp(&a.cost).then_with(|| a.key.cmp(&b.key)));
        v
    };
    Groups {
        total: all.group("all".into()),
        by_project: sorted(by_project),
        by_task: sorted(by_task),
        by_user: sorted(by_user),
    }
}

/// The period's runs summed: in all, and by project, task name and owner.
pub struct Groups {
    /// Every run.
    pub total: Group,
    /// By project, most costly first.
    pub by_project: Vec<Group>,
    /// By task name.
    pub by_task: Vec<Group>,
    /// By the task's owner.
    pub by_user: Vec<Group>,
}
