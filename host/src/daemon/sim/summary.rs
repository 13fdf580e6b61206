//! What a simulation comes to: wait and completion times with their
//! percentiles (nearest rank), makespan, utilisation, use by project and by
//! user, and energy and cost at the tariff against running each job at its
//! arrival. Times are seconds from the trace's second 0.
//!
//! - JCT (job completion time) = end - arrival; wait = start - arrival.
//! - Makespan = the last end, from second 0.
//! - Utilisation = GPU-seconds busy / (GPUs x makespan).

use std::collections::BTreeMap;

use serde::Serialize;

use super::engine::Outcome;
use super::trace::Job;
use crate::tariff::Tariff;

/// Mean and percentiles of a set of durations, seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Longest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (seconds); all zero when there are none.
    pub fn of(mut values: Vec<f64>) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        values.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            // Nearest rank: the smallest value with at least p% at or below it.
            let n = values.len();
            let k = ((p / 100.0) * n as f64).ceil() as usize;
            values[k.clamp(1, n) - 1]
        };
        Spread {
            mean: values.iter().sum::<f64>() / values.len() as f64,
            p50: rank(50.0),
            p95: rank(95.0),
            p99: rank(99.0),
            max: values[values.len() - 1],
        }
    }
}

/// One project's or user's share.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Share {
    /// Jobs that ran.
    pub jobs: u64,
    /// GPU-hours they used.
    pub gpu_hours: f64,
    /// Their mean wait, seconds.
    pub mean_wait_s: f64,
}

/// A job that never started.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NeverStarted {
    /// Its id.
    pub id: i64,
    /// Why.
    pub why: String,
}

/// A simulation's figures (`--json` prints this object).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Jobs in the trace.
    pub jobs: u64,
    /// Jobs that ran.
    pub started: u64,
    /// Jobs that never started (too big for the machine, or left waiting).
    pub never_started: u64,
    /// Each of them, with why.
    pub never: Vec<NeverStarted>,
    /// Completion times.
    pub jct_s: Spread,
    /// Waits.
    pub wait_s: Spread,
    /// The job that waited longest (its id).
    pub longest_wait_job: Option<i64>,
    /// The last end, seconds from second 0.
    pub makespan_s: f64,
    /// GPU-seconds busy over GPUs x makespan.
    pub utilisation: f64,
    /// GPU-hours used.
    pub gpu_hours: f64,
    /// By project.
    pub projects: BTreeMap<String, Share>,
    /// By user.
    pub users: BTreeMap<String, Share>,
    /// Energy of the jobs that name their draw (`power_w`), kWh.
    pub energy_kwh: f64,
    /// What that energy cost at the tariff.
    pub cost: f64,
    /// What it would have cost had each job started at its arrival.
    pub cost_at_arrival: f64,
    /// The tariff's currency.
    pub currency: String,
    /// Scheduling passes.
    pub passes: u64,
    /// Passes that asked the policy chain.
    pub chain_passes: u64,
    /// Runs a policy preempted (their jobs ran again for what was left).
    pub preemptions: u64,
    /// GPUs simulated.
    pub gpus: u32,
}

impl Summary {
    /// Sums `outcome` of `jobs` on `gpus` GPUs, second 0 at `start_ms`.
    pub fn of(jobs: &[Job], outcome: &Outcome, gpus: u32, start_ms: i64, tariff: &Tariff) -> Self {
        let s = |ms: i64| ms as f64 / 1000.0;
        let mut jct = Vec::with_capacity(outcome.runs.len());
        let mut wait = Vec::with_capacity(outcome.runs.len());
        let mut out = Summary {
            jobs: jobs.len() as u64,
            started: 0,
            never_started: outcome.never.len() as u64,
            never: outcome
                .never
                .iter()
                .map(|(i, why)| NeverStarted {
                    id: jobs[*i].id,
                    why: why.clone(),
                })
                .collect(),
            passes: outcome.passes,
            chain_passes: outcome.chain_passes,
            currency: tariff.currency.clone(),
            gpus,
            ..Summary::default()
        };
        let mut busy_ms: i128 = 0;
        let mut last_end = start_ms;
        let mut longest = (-1.0, None);
        let mut waits: BTreeMap<(bool, String), (u64, f64)> = BTreeMap::new();
        // A job preempted runs more than once: it waited until its first
        // start and completed at its last end.
        let mut span: BTreeMap<usize, (i64, i64)> = BTreeMap::new();
        for r in &outcome.runs {
            let e = span.entry(r.job).or_insert((r.start, r.end));
            *e = (e.0.min(r.start), e.1.max(r.end));
        }
        out.started = span.len() as u64;
        out.preemptions = outcome.preemptions;
        for (&i, &(first, end)) in &span {
            let job = &jobs[i];
            let arrival = start_ms.saturating_add(job.arrival);
            let w = s(first - arrival);
            wait.push(w);
            jct.push(s(end - arrival));
            if w > longest.0 {
                longest = (w, Some(job.id));
            }
            for (by_user, name) in [(false, &job.project), (true, &job.user)] {
                let share = if by_user {
                    out.users.entry(name.to_string()).or_default()
                } else {
                    out.projects.entry(name.to_string()).or_default()
                };
                share.jobs += 1;
                let e = waits.entry((by_user, name.to_string())).or_default();
                e.0 += 1;
                e.1 += w;
            }
        }
        for r in &outcome.runs {
            let job = &jobs[r.job];
            let arrival = start_ms.saturating_add(job.arrival);
            last_end = last_end.max(r.end);
            let gpu_ms = i128::from(r.end - r.start) * i128::from(job.gpus);
            busy_ms += gpu_ms;
            let hours = gpu_ms as f64 / 3_600_000.0;
            for (by_user, name) in [(false, &job.project), (true, &job.user)] {
                let share = if by_user {
                    out.users.entry(name.to_string()).or_default()
                } else {
                    out.projects.entry(name.to_string()).or_default()
                };
                share.gpu_hours += hours;
            }
            if let Some(watts) = job.power_w {
                let draw = watts * f64::from(job.gpus);
                out.energy_kwh += draw * s(r.end - r.start) / 3_600_000.0;
                out.cost += tariff.cost_spanned(r.start, r.end, draw);
                let at_arrival_end = arrival.saturating_add(r.end - r.start);
                out.cost_at_arrival += tariff.cost_spanned(arrival, at_arrival_end, draw);
            }
        }
        for ((by_user, name), (n, total)) in waits {
            let share = if by_user {
                out.users.get_mut(&name)
            } else {
                out.projects.get_mut(&name)
            };
            if let Some(share) = share {
                share.mean_wait_s = total / n as f64;
            }
        }
        out.jct_s = Spread::of(jct);
        out.wait_s = Spread::of(wait);
        out.longest_wait_job = longest.1;
        out.makespan_s = s(last_end - start_ms);
        out.gpu_hours = busy_ms as f64 / 3_600_000.0;
        let capacity = f64::from(gpus) * out.makespan_s * 1000.0;
        out.utilisation = if capacity > 0.0 {
            busy_ms as f64 / capacity
        } else {
            0.0
        };
        out
    }

    /// The figures as a person reads them.
    pub fn text(&self) -> String {
        let h = |s: f64| nightjar_core::time::fmt_span((s * 1000.0) as i64);
        let mut t = String::new();
        t += &format!(
            "jobs         {} ({} ran, {} never started)\n",
            self.jobs, self.started, self.never_started
        );
        t += &format!(
            "wait         mean {}  p50 {}  p95 {}  p99 {}  longest {}{}\n",
            h(self.wait_s.mean),
            h(self.wait_s.p50),
            h(self.wait_s.p95),
            h(self.wait_s.p99),
            h(self.wait_s.max),
            self.longest_wait_job
                .map(|id| format!(" (job {id})"))
                .unwrap_or_default()
        );
        t += &format!(
            "completion   mean {}  p50 {}  p95 {}  p99 {}\n",
            h(self.jct_s.mean),
            h(self.jct_s.p50),
            h(self.jct_s.p95),
            h(self.jct_s.p99)
        );
        t += &format!(
            "makespan     {}  on {} GPUs, {:.1}% used, {:.1} GPU-hours\n",
            h(self.makespan_s),
            self.gpus,
            self.utilisation * 100.0,
            self.gpu_hours
        );
        if self.energy_kwh > 0.0 {
            t += &format!(
                "energy       {:.3} kWh, {:.2} {} ({:.2} {} had each job started on arrival)\n",
                self.energy_kwh, self.cost, self.currency, self.cost_at_arrival, self.currency
            );
        }
        if self.preemptions > 0 {
            t += &format!("preempted    {} runs\n", self.preemptions);
        }
        t += &format!(
            "passes       {} ({} asked the policy chain)\n",
            self.passes, self.chain_passes
        );
        for n in self.never.iter().take(10) {
            t += &format!("never        job {}: {}\n", n.id, n.why);
        }
        if self.never.len() > 10 {
            t += &format!(
                "never        ... and {} more (`--json` lists them all)\n",
                self.never.len() - 10
            );
        }
        for (title, rows) in [("project", &self.projects), ("user", &self.users)] {
            t += &format!(
                "\n{:<20} {:>6} {:>10} {:>12}\n",
                title.to_uppercase(),
                "JOBS",
                "GPU-HOURS",
                "MEAN WAIT"
            );
            for (name, s) in rows {
                t += &format!(
                    "{:<20} {:>6} {:>10.1} {:>12}\n",
                    nightjar_cli::table::clean_text(name),
                    s.jobs,
                    s.gpu_hours,
                    h(s.mean_wait_s)
                );
            }
        }
        t
    }
}

/// The schedule as CSV: `id,start_s,end_s,gpus,gpu_ids,preempted`, in start
/// order (ties by id), seconds from second 0; a job that never started has
/// empty times.
pub fn schedule_csv(jobs: &[Job], outcome: &Outcome, start_ms: i64) -> String {
    let s = |ms: i64| {
        let v = (ms - start_ms) as f64 / 1000.0;
        format!("{v}")
    };
    let mut runs: Vec<_> = outcome.runs.iter().collect();
    runs.sort_by_key(|r| (r.start, jobs[r.job].id));
    let mut out = String::from("id,start_s,end_s,gpus,gpu_ids,preempted\n");
    for r in runs {
        let job = &jobs[r.job];
        let ids: Vec<String> = r.gpus.iter().map(u32::to_string).collect();
        out += &format!(
            "{},{},{},{},\"{}\",{}\n",
            job.id,
            s(r.start),
            s(r.end),
            job.gpus,
            ids.join(" "),
            u8::from(r.preempted)
        );
    }
    for (i, _) in &outcome.never {
        out += &format!("{},,,{},\"\",0\n", jobs[*i].id, jobs[*i].gpus);
    }
    out
}
