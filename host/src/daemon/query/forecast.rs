//! `nightjar estimate` (the `forecast` verb), and the expected start `why`,
//! `show` and `ls --wide` print: the live queue simulated forward from now
//! by the simulator's engine (`daemon/sim`), on the daemon's own pool as it
//! is (its runs in progress, closed GPUs, memory), with the runs in
//! progress ending at their expected ends, the waiting tasks in their
//! order (the policy chain, the same components loaded a second time so a
//! forecast never touches the live chain's state, or the built-in order),
//! and backfill as `[scheduler] order` sets it.
//!
//! Nothing is invented: a run without a runtime estimate (no timeout, no
//! successful run of its name) is planned as never ending, so what must
//! wait for its GPUs is reported as not known, with why.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Result;
use nightjar_core::api::estimate::Estimate;
use nightjar_core::api::forecast::{ForecastReport, TaskForecast};

use crate::daemon::pipeline::chain::Chain;
use crate::daemon::sim::{Job, Machine, Options, Sim, UNKNOWN_MS};
use crate::daemon::state::{Daemon, lock};
use crate::store::Candidate;
use crate::task::model::TaskSpec;

/// Most waiting tasks a forecast plays (the rest are not known).
pub const MAX_TASKS: usize = 100_000;

/// Most policy wake-ups (a deferral's `until`) one forecast follows in all:
/// a policy that asks again every second for ever, while runs end one after
/// another, would otherwise earn 10,000 passes per end.
const WAKE_BUDGET: u64 = 10_000;

/// The chain a forecast asks, loaded apart from the live one, and the
/// plugin files it was loaded from.
pub(in crate::daemon) type ForecastChain = (Vec<Option<(u32, u64, std::time::SystemTime)>>, Chain);

/// What one forecast simulates: the jobs (runs in progress first), their
/// specs, and what is known of each.
pub(super) struct Plan {
    pub(super) jobs: Vec<Job>,
    specs: Vec<Arc<TaskSpec>>,
    /// Per job: its runtime estimate (runs in progress: `None`, see `known`).
    pub(super) estimates: Vec<Option<Estimate>>,
    /// Per job: whether its runtime is known (it has an estimate); after
    /// the play, whether it cannot hold GPUs for ever (known, or never started).
    pub(super) known: Vec<bool>,
    /// Per job: its task id in the store (`None`: a dry-run submission).
    pub(super) task: Vec<Option<i64>>,
    /// Runs in progress: (job, started, placement).
    adopted: Vec<(usize, i64, crate::scheduler::Placement)>,
    /// Per job: when its age counts from, ms after now (its submit time:
    /// a retry's backoff delays its arrival, not its place).
    ages: Vec<i64>,
}

/// A job for `spec`, arriving `arrival` ms after now, running `estimate`.
fn job_of(id: i64, spec: &TaskSpec, arrival: i64, estimate: &Option<Estimate>) -> Job {
    let ms = estimate.as_ref().map_or(UNKNOWN_MS, |e| e.ms.max(1));
    Job {
        id,
        name: spec.name.as_str().into(),
        project: spec.project.as_str().into(),
        user: spec.owner.as_ref().map_or("", |o| o.name.as_str()).into(),
        priority: spec.priority,
        arrival,
        gpus: spec.resources.gpus,
        gpu_mem: spec.resources.gpu_mem.map(|b| b.as_u64()),
        duration: ms,
        estimate: ms,
        power_w: None,
        preemptible: spec.preemptible,
        checkpoint: None,
        temp_c: None,
    }
}

impl Daemon {
    /// How long one forecast may work (`nightjar estimate`, `submit
    /// --dry-run`): ten thousand tasks through the chain take minutes.
    pub const FORECAST_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

    /// As [`Daemon::FORECAST_LIMIT`], for the expected start `show`, `why`
    /// and `ls --wide` add.
    pub const BRIEF_FORECAST_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

    /// Waits for this caller's turn to forecast: one forecast at a time,
    /// since each plays the whole queue forward (through the four
    /// first-party policies, about 0.2 s for a thousand tasks). Held until the permit drops:
    /// the forecast's thread holds it, not the caller, who may go away.
    pub async fn forecast_turn(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        std::sync::Arc::clone(&self.pipeline.forecasts)
            .acquire_owned()
            .await
            .ok()
    }

    /// Whether a forecast holds the turn now.
    #[cfg(test)]
    pub(crate) fn forecast_busy(&self) -> bool {
        self.pipeline.forecasts.available_permits() == 0
    }

    /// Forecasts the tasks `ids` (a sweep's id: its members; each task
    /// once) and the submission `extra` (checked members not queued), or
    /// (`every`) every waiting task, at the daemon's now.
    /// It stops after `limit` of work: what has not started by then is
    /// not known, and says so.
    pub fn forecast(
        &self,
        ids: &[i64],
        extra: Vec<TaskSpec>,
        every: bool,
        limit: std::time::Duration,
    ) -> Result<ForecastReport> {
        let until = std::time::Instant::now() + limit;
        let now = self.now_ms();
        let mut plan = self.plan(now, extra)?;
        // Tasks asked for that are not waiting in the queue say where they are.
        let mut rows: Vec<Result<usize, TaskForecast>> = Vec::new();
        if every {
            rows = (0..plan.jobs.len())
                .filter(|&i| !plan.adopted.iter().any(|a| a.0 == i))
                .map(Ok)
                .collect();
        } else {
            // Runs in progress are rows of their own (`not_waiting`).
            let index: HashMap<i64, usize> = (0..plan.jobs.len())
                .filter(|&i| !plan.adopted.iter().any(|a| a.0 == i))
                .filter_map(|i| plan.task[i].map(|t| (t, i)))
                .collect();
            let mut seen = std::collections::HashSet::new();
            for &id in ids {
                if let Some(&i) = index.get(&id) {
                    if seen.insert(id) {
                        rows.push(Ok(i));
                    }
                    continue;
                }
                let d = self.reader().show(id)?;
                let members: Vec<i64> = d.members.iter().map(|m| m.id).collect();
                if members.is_empty() {
                    if seen.insert(id) {
                        rows.push(Err(self.not_waiting(d)?));
                    }
                    continue;
                }
                for m in members.into_iter().filter(|&m| seen.insert(m)) {
                    if let Some(&i) = index.get(&m) {
                        rows.push(Ok(i));
                        continue;
                    }
                    // The store's guard ends here: `not_waiting` takes locks of its own.
                    let detail = self.reader().show(m)?;
                    rows.push(Err(self.not_waiting(detail)?));
                }
            }
            rows.extend(
                (0..plan.jobs.len())
                    .filter(|&i| plan.task[i].is_none())
                    .map(Ok),
            );
        }
        let targets: Vec<usize> = rows
            .iter()
            .filter_map(|r| r.as_ref().ok().copied())
            .collect();
        let running: Vec<usize> = plan.adopted.iter().map(|a| a.0).collect();
        let outcome = if every || !targets.is_empty() {
            self.play(&mut plan, now, (!every).then(|| targets.clone()), until)?
        } else {
            // Nothing asked for waits in the queue: nothing to play.
            crate::daemon::sim::Outcome::default()
        };
        let started: HashMap<usize, &crate::daemon::sim::Ran> =
            outcome.runs.iter().map(|r| (r.job, r)).collect();
        // What a task can wait behind for ever: a run of unknown length
        // in progress, or started in the play (one that never starts holds nothing).
        for k in 0..plan.known.len() {
            let holds = running.contains(&k) || started.contains_key(&k);
            plan.known[k] |= !holds;
        }
        let never: HashMap<usize, &str> = outcome
            .never
            .iter()
            .map(|(i, why)| (*i, why.as_str()))
            .collect();
        let mut tasks: Vec<TaskForecast> = rows
            .into_iter()
            .map(|r| match r {
                Ok(i) => self.row(
                    &plan,
                    i,
                    (started.get(&i).copied(), never.get(&i).copied()),
                    now,
                ),
                Err(t) => Ok(t),
            })
            .collect::<Result<_>>()?;
        if every {
            tasks.sort_by_key(|t| (t.start.is_none(), t.start, t.id));
        }
        Ok(ForecastReport {
            now,
            order: self.order_words(),
            not_modelled: self.not_modelled(),
            tasks,
            passes: outcome.passes,
            chain_passes: outcome.chain_passes,
        })
    }

    /// The runs in progress and the waiting tasks (dependencies met; a
    /// backoff's end is its arrival), then `extra`, submitted now.
    fn plan(&self, now: i64, extra: Vec<TaskSpec>) -> Result<Plan> {
        let held: Vec<_> = lock(&self.runs.placed).values().cloned().collect();
        let running: HashMap<i64, crate::store::RunningInfo> = self
            .store()
            .running_tasks()?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
        let queue: Vec<Candidate> = self.store().candidates(i64::MAX / 4, MAX_TASKS, 0)?;
        let mut plan = Plan {
            jobs: Vec::new(),
            specs: Vec::new(),
            estimates: Vec::new(),
            known: Vec::new(),
            task: Vec::new(),
            adopted: Vec::new(),
            ages: Vec::new(),
        };
        for h in held {
            let Some(r) = running.get(&h.task) else {
                continue;
            };
            // Its expected end as backfill reckons it (the estimate made at
            // its start; under first fit none was made, so it is made now).
            let estimate = match h.estimate {
                Some(ms) => Some(ms),
                None => {
                    // The store's guard ends here: `estimate` takes it again.
                    let spec = self.store().task_spec(h.task).ok();
                    spec.and_then(|spec| self.estimate(&spec)).map(|e| e.ms)
                }
            };
            let ms = estimate.map_or(UNKNOWN_MS, |e| e.max(1));
            let job = Job {
                id: h.task,
                name: r.name.as_str().into(),
                project: r.project.as_str().into(),
                // Its owner, as `[quotas]` counts it.
                user: crate::users::name_of(h.owner).into(),
                priority: r.priority,
                arrival: h.started_at - now,
                gpus: h.placement.gpus.len() as u32,
                gpu_mem: None,
                duration: ms,
                estimate: ms,
                power_w: None,
                preemptible: r.preemptible,
                checkpoint: None,
                temp_c: None,
            };
            let i = plan.jobs.len();
            plan.specs.push(Arc::new(crate::daemon::sim::spec_of(&job)));
            plan.jobs.push(job);
            plan.estimates.push(None);
            plan.known.push(estimate.is_some_and(|e| e < UNKNOWN_MS));
            plan.task.push(Some(h.task));
            plan.adopted.push((i, h.started_at, h.placement));
            plan.ages.push(h.started_at - now);
        }
        for c in queue {
            let est = self.estimate(&c.spec);
            // Its age is its submit time; a backoff still running is when it arrives.
            let arrival = if c.eligible_at > now {
                c.eligible_at
            } else {
                c.submitted_at
            };
            plan.jobs.push(job_of(c.id, &c.spec, arrival - now, &est));
            plan.ages.push(c.submitted_at - now);
            plan.specs.push(c.spec);
            plan.known
                .push(est.as_ref().is_some_and(|e| e.ms < UNKNOWN_MS));
            plan.estimates.push(est);
            plan.task.push(Some(c.id));
        }
        // The first member the oldest of them (a submit gives it the lowest id).
        let n = extra.len();
        for (k, spec) in extra.into_iter().enumerate() {
            let est = self.estimate(&spec);
            // Ranks after every queued task of its class: it would be the newest.
            let id = i64::MAX - extra_offset(n - 1 - k);
            plan.jobs.push(job_of(id, &spec, 0, &est));
            plan.ages.push(0);
            plan.specs.push(Arc::new(spec));
            plan.known
                .push(est.as_ref().is_some_and(|e| e.ms < UNKNOWN_MS));
            plan.estimates.push(est);
            plan.task.push(None);
        }
        Ok(plan)
    }

    /// Plays `plan` forward from `now` until `targets` have started (or to
    /// its end).
    fn play(
        &self,
        plan: &mut Plan,
        now: i64,
        targets: Option<Vec<usize>>,
        until: std::time::Instant,
    ) -> Result<crate::daemon::sim::Outcome> {
        let pool = lock(&self.pool).clone();
        let opts = Options {
            machine: Machine {
                gpus: pool.gpus.len() as u32,
                gpu_mem: None,
                slots: pool.slots,
                share: pool.share,
            },
            order: crate::daemon::pipeline::backfill::mode_of(self.cfg.scheduler.order()),
            start_ms: now,
        };
        let window = self.cfg.plugins.usage_window.as_millis() as i64;
        let usage: Vec<_> = self
            .store()
            .usage_since(now.saturating_sub(window))?
            .into_iter()
            .filter(|u| u.ended_at.is_some())
            .collect();
        let mut chain = self.checkout_forecast_chain();
        if let Some((_, c)) = chain.as_mut() {
            // As the scheduler's chain stands, not as earlier forecasts left it.
            let disabled: Vec<String> = (lock(&self.pipeline.chain_status).views.iter())
                .filter(|v| v.state == "disabled")
                .map(|v| v.name.clone())
                .collect();
            c.mirror(&disabled);
        }
        let mut sim = Sim::new(
            &self.cfg,
            &plan.jobs,
            opts,
            chain.as_mut().map(|c| &mut c.1),
        )
        .on_pool(pool)
        .with_specs(std::mem::take(&mut plan.specs))
        .with_ages(std::mem::take(&mut plan.ages))
        .with_usage(usage);
        for (i, start, placement) in std::mem::take(&mut plan.adopted) {
            sim = sim.adopt(i, start, placement);
        }
        if let Some(t) = targets {
            sim = sim.watch(t);
        }
        // However a policy asks to be asked again, the forecast ends soon.
        sim = sim.wake_budget(WAKE_BUDGET).deadline(until);
        let outcome = sim.run().map_err(anyhow::Error::msg);
        if let Some(c) = chain {
            *lock(&self.pipeline.forecast_chain) = Some(c);
        }
        outcome
    }

    /// The forecast chain, loaded again when its plugin files changed (taken
    /// out while a forecast uses it: two at once load a second copy).
    fn checkout_forecast_chain(&self) -> Option<ForecastChain> {
        if self.cfg.plugins.chain.is_empty() {
            return None;
        }
        let seen = Chain::fingerprint(&self.cfg);
        if let Some(c) = lock(&self.pipeline.forecast_chain).take()
            && c.0 == seen
        {
            return Some(c);
        }
        let engine = self.pipeline.forecast_engine.get_or_init(|| {
            crate::plugins::engine::PluginEngine::new(Some(self.cfg.plugin_cache_dir())).ok()
        });
        // A simulated hour passes in a moment: the per-minute CPU budget
        // would stop the chain for nothing. The per-call limits apply, on
        // this thread (`Chain::load_here`).
        let mut cfg = self.cfg.clone();
        cfg.plugins.cpu_budget = std::time::Duration::from_secs(u32::MAX as u64);
        Some((seen, Chain::load_here(&cfg, engine.as_ref())))
    }
}

/// Dry-run members take ids from the top, `k` below the largest.
fn extra_offset(k: usize) -> i64 {
    i64::try_from(k).unwrap_or(i64::MAX / 2)
}
