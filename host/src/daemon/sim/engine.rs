//! The simulator's event loop: the daemon's scheduling pieces on a virtual
//! clock, with no store and no processes. At each event time, runs that end
//! end first, then jobs that arrive are queued, then one pass: the policy
//! chain's ranking (the same components, through the same snapshot and
//! combine as the daemon's passes) or the built-in order (priority class,
//! then age, then id), placed through the same pool and backfill rule
//! ([`Easy`]) in the chosen [`Mode`]. A job holds its GPUs from its start
//! to start + duration. Nothing sleeps and nothing reads the wall clock, so
//! one trace and config give the same schedule every time.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use super::runs::Runs;
use super::trace::Job;
use super::wakes::Wakes;
use crate::config::Config;
use crate::daemon::pipeline::chain::Chain;
use crate::scheduler::backfill::Mode;
use crate::scheduler::{Placement, Pool, PoolGpu, Stagger};
use crate::task::model::{CommandSpec, Owner, Resources, RetryPolicy, TaskSpec};

/// Why a job did not start when the simulation simply ran out of events
/// (a forecast's: it waits for GPUs that runs of unknown length hold).
pub const LEFT_WAITING: &str = "still waiting when nothing else was left to happen";

/// A runtime no one knows (a forecast's task with no timeout and no
/// history): such a run is planned as never ending, so what waits for its
/// GPUs is reported as not known rather than given an invented start.
pub const UNKNOWN_MS: i64 = i64::MAX / 8;

/// The simulated machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// Its GPUs.
    pub gpus: u32,
    /// Each GPU's memory, bytes (`None`: not modelled; `gpu_mem` is not checked).
    pub gpu_mem: Option<u64>,
    /// Runs at once at most (`slots`).
    pub slots: u32,
    /// Whether tasks whose memory fits share a GPU (`[gpu] share`).
    pub share: bool,
}

/// How one simulation runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The machine.
    pub machine: Machine,
    /// What a job that does not fit means for the jobs behind it.
    pub order: Mode,
    /// The wall-clock time (Unix ms) of the trace's second 0.
    pub start_ms: i64,
}

/// One job's run, times in Unix ms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// The job's index in the trace.
    pub job: usize,
    /// Started.
    pub start: i64,
    /// Ended.
    pub end: i64,
    /// The GPUs it held.
    pub gpus: Vec<u32>,
    /// A policy preempted it (its job ran again later for what was left).
    pub preempted: bool,
}

/// What a simulation did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Every run, in start order.
    pub runs: Vec<Ran>,
    /// Jobs that never started, with why.
    pub never: Vec<(usize, String)>,
    /// Scheduling passes made.
    pub passes: u64,
    /// Passes that asked the policy chain.
    pub chain_passes: u64,
    /// Runs preempted.
    pub preemptions: u64,
}

/// A run in progress.
pub(super) struct Running {
    pub(super) job: usize,
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) placement: Placement,
}

/// The state of one simulation.
pub struct Sim<'a> {
    pub(super) cfg: &'a Config,
    pub(super) jobs: &'a [Job],
    pub(super) specs: Vec<Arc<TaskSpec>>,
    pub(super) opts: Options,
    pub(super) chain: Option<&'a mut Chain>,
    pub(super) pool: Pool,
    /// Waiting jobs in the built-in order: (priority rank reversed, age
    /// (its arrival, or [`Sim::with_ages`]'), id, index); [`Sim::key`].
    pub(super) waiting: BTreeSet<(i64, i64, i64, usize)>,
    /// How many waiting jobs want each GPU count.
    pub(super) wants: BTreeMap<u32, usize>,
    /// GPUs held by running jobs (each whole: [`Sim::nothing_can_start`]
    /// reads it only without sharing).
    pub(super) busy: u32,
    /// Per job: how long it has left to run (less than its duration after a
    /// preemption past a checkpoint).
    pub(super) remaining: Vec<i64>,
    /// Per job: when a policy last preempted it.
    pub(super) preempted_at: HashMap<usize, i64>,
    /// The chain's preemption requests of its last pass (task ids).
    pub(super) preempt_requests: Vec<i64>,
    /// Runs and GPUs each user holds (`[quotas]`).
    pub(super) held: HashMap<Arc<str>, (u32, u32)>,
    /// Jobs already running when the simulation begins ([`Sim::adopt`]).
    pub(super) adopted: Vec<bool>,
    /// Jobs whose start ends the simulation once all have started ([`Sim::watch`]).
    pub(super) targets: Option<Vec<usize>>,
    /// Most chain wake-ups followed in all ([`Sim::wake_budget`]).
    pub(super) wake_budget: Option<u64>,
    /// Per job, when its age counts from, if not its arrival ([`Sim::with_ages`]).
    pub(super) ages: Option<Vec<i64>>,
    /// When the simulation stops, done or not ([`Sim::deadline`]).
    pub(super) deadline: Option<std::time::Instant>,
    /// A policy's failure ends it ([`Sim::refusing_failures`]).
    pub(super) refuse_failures: bool,
    /// The running runs, and those that ended within the chain's usage window.
    pub(super) runs: Runs,
    /// The last chain pass's queue, edited for the next.
    pub(super) kept: super::queue::KeptQueue,
    /// The GPUs the chain closed in its last pass, by whom.
    pub(super) closed_by: HashMap<u32, Vec<String>>,
    /// When the chain asked to look again.
    pub(super) wake: Option<i64>,
    pub(super) out: Outcome,
}

/// The spec a trace job stands for: what the snapshot and placement read.
pub fn spec_of(job: &Job) -> TaskSpec {
    TaskSpec {
        name: job.name.to_string(),
        project: job.project.to_string(),
        command: CommandSpec::Argv(Vec::new()),
        workdir: "/".into(),
        env: Default::default(),
        inputs: Vec::new(),
        output: None,
        priority: job.priority,
        resources: Resources {
            gpus: job.gpus,
            gpu_mem: job.gpu_mem.map(bytesize::ByteSize::b),
            cpus: None,
            mem: None,
            // The daemon tells policies a task's expected runtime through its timeout.
            timeout: Some(Duration::from_millis(job.estimate.max(1) as u64)),
        },
        retry: RetryPolicy::default(),
        params: Default::default(),
        preemptible: job.preemptible,
        checkpoint: None,
        validate: Vec::new(),
        owner: Some(Owner {
            uid: 0,
            name: job.user.to_string(),
        }),
        umask: None,
        seed: None,
        cache: false,
        environment: None,
    }
}

impl<'a> Sim<'a> {
    /// A simulation of `jobs` under `cfg`, through `chain` when there is one.
    pub fn new(
        cfg: &'a Config,
        jobs: &'a [Job],
        opts: Options,
        chain: Option<&'a mut Chain>,
    ) -> Sim<'a> {
        let m = &opts.machine;
        let pool = Pool {
            slots: m.slots,
            gpus: (0..m.gpus)
                // No UUID here (the chain's views name them `SIM-i`): backfill
                // clones the pool, and an empty string costs nothing to clone.
                .map(|i| PoolGpu {
                    mem_total: m.gpu_mem,
                    ..PoolGpu::unmonitored(i)
                })
                .collect(),
            cpus: Vec::new(),
            share: m.share,
            policy_closed: Default::default(),
            stagger: Stagger {
                every_ms: i64::try_from(cfg.gpu.stagger.as_millis()).unwrap_or(i64::MAX),
                ..Stagger::default()
            },
        };
        Sim {
            cfg,
            jobs,
            specs: jobs.iter().map(|j| Arc::new(spec_of(j))).collect(),
            opts,
            chain,
            pool,
            waiting: BTreeSet::new(),
            wants: BTreeMap::new(),
            busy: 0,
            remaining: jobs.iter().map(|j| j.duration).collect(),
            preempted_at: HashMap::new(),
            preempt_requests: Vec::new(),
            held: HashMap::new(),
            adopted: vec![false; jobs.len()],
            targets: None,
            wake_budget: None,
            ages: None,
            deadline: None,
            refuse_failures: false,
            runs: Runs::default(),
            kept: Default::default(),
            closed_by: HashMap::new(),
            wake: None,
            out: Outcome::default(),
        }
    }

    /// Why `job` can never start on this machine, if it cannot.
    fn never_fits(&self, job: &Job) -> Option<String> {
        let m = &self.opts.machine;
        if job.gpus > m.gpus {
            return Some(format!(
                "needs {} GPUs; the machine has {}",
                job.gpus, m.gpus
            ));
        }
        match (job.gpu_mem, m.gpu_mem) {
            (Some(want), Some(have)) if want > have && job.gpus > 0 => Some(format!(
                "needs {} per GPU; each GPU has {}",
                bytesize::ByteSize::b(want),
                bytesize::ByteSize::b(have)
            )),
            _ => None,
        }
    }

    /// Runs the trace to its end: every job started and ended, or never
    /// able to. An error: a policy answered two identical snapshots
    /// differently (named), so no schedule it gives could be repeated.
    pub fn run(mut self) -> Result<Outcome, String> {
        let mut arrivals: Vec<usize> = (0..self.jobs.len()).filter(|&i| !self.adopted[i]).collect();
        arrivals.sort_by_key(|&i| (self.jobs[i].arrival, self.jobs[i].id));
        let mut next = 0;
        let t0 = self.opts.start_ms;
        let Some(&first) = arrivals.first() else {
            return Ok(self.out);
        };
        // A forecast's tasks were queued before its second 0: it starts there.
        let mut now = t0.saturating_add(self.jobs[first].arrival).max(t0);
        let mut started_before = 0;
        let mut wakes = Wakes::new(now);
        if let Some(n) = self.wake_budget {
            wakes.budget(n);
        }
        let mut cut = false;
        loop {
            // A forecast's time is limited (the only wall clock read here).
            if self
                .deadline
                .is_some_and(|d| std::time::Instant::now() >= d)
            {
                cut = true;
                break;
            }
            self.end_runs(now);
            while let Some(&i) = arrivals.get(next) {
                let job = &self.jobs[i];
                if t0.saturating_add(job.arrival) > now {
                    break;
                }
                next += 1;
                match self.never_fits(job) {
                    Some(why) => self.out.never.push((i, why)),
                    None => {
                        self.waiting.insert(self.key(i));
                        *self.wants.entry(job.gpus).or_default() += 1;
                    }
                }
            }
            if !self.waiting.is_empty() && !self.nothing_can_start() {
                self.pass(now)?;
                if self.targets_started() {
                    break;
                }
            }
            // A run of unknown length holds its GPUs past every event.
            let ends = (self.runs.running().iter().map(|r| r.end))
                .filter(|&e| e < t0.saturating_add(UNKNOWN_MS))
                .min();
            let arrives = arrivals
                .get(next)
                .map(|&i| t0.saturating_add(self.jobs[i].arrival));
            if self.out.runs.len() > started_before {
                started_before = self.out.runs.len();
                wakes.restart(now);
            }
            // The chain's wake-ups between events are followed while they
            // start something (a policy that defers a job for ever, asking
            // again each second, would otherwise be asked for ever).
            // A stagger's end is an event too: a job waiting for it starts then.
            let staggered =
                (self.pool.stagger.next_expiry()).filter(|&t| t > now && !self.waiting.is_empty());
            let ends = [ends, staggered].into_iter().flatten().min();
            let wake = self.wake.filter(|w| *w > now && !self.waiting.is_empty());
            match wakes.next([ends, arrives].into_iter().flatten().min(), wake) {
                Some(t) => now = t,
                None => break,
            }
        }
        let spent = format!(
            "still deferred by the policies after {} of their wake-ups, the most a forecast follows",
            self.wake_budget.unwrap_or_default()
        );
        let cut_at = format!(
            "not started when the forecast reached its time limit, its simulation at {}: the queue is too long to play out in time (ask about fewer tasks: `nightjar estimate ID`)",
            nightjar_core::time::fmt_local(now)
        );
        let why = if cut {
            cut_at.as_str()
        } else if wakes.stalled {
            "still deferred by the policies 30 days (or 10,000 passes) after the last start or event"
        } else if wakes.spent && self.chain.is_some() {
            spent.as_str()
        } else if self.chain.is_some() {
            &format!("{LEFT_WAITING} (deferred or closed by a policy)")
        } else {
            LEFT_WAITING
        };
        let mut left: Vec<usize> = self.waiting.iter().map(|w| w.3).collect();
        if cut {
            // Those yet to arrive are not known either.
            left.extend(arrivals[next..].iter().copied());
        }
        self.out
            .never
            .extend(left.into_iter().map(|i| (i, why.to_string())));
        self.out.never.sort_by_key(|(i, _)| self.jobs[*i].id);
        Ok(self.out)
    }

    /// Ends every run due by `now`, giving back what it held.
    fn end_runs(&mut self, now: i64) {
        let window = self.cfg.plugins.usage_window.as_millis() as i64;
        let mut i = 0;
        while i < self.runs.running().len() {
            if self.runs.running()[i].end > now {
                i += 1;
                continue;
            }
            let r = self.runs.take(i);
            self.pool.give_back(&r.placement);
            self.busy -= r.placement.gpus.len() as u32;
            self.hold(r.job, r.placement.gpus.len() as u32, false);
            self.runs.ended(&self.jobs[r.job], r.start, r.end);
        }
        self.runs.forget_before(now.saturating_sub(window));
    }

    /// One pass at `now`: the order, then starts in it.
    fn pass(&mut self, now: i64) -> Result<(), String> {
        self.out.passes += 1;
        self.pool.stagger.now = now;
        let order: Vec<usize> = if self.chain.is_some() {
            match self.chain_order(now)? {
                Some(order) => order,
                None => return Ok(()),
            }
        } else {
            self.waiting.iter().map(|w| w.3).collect()
        };
        let requests = std::mem::take(&mut self.preempt_requests);
        let preempted = self.preempt(&requests, &order, now);
        self.dispatch(&order, now);
        // Back in the queue after the pass that stopped them.
        for i in preempted {
            self.waiting.insert(self.key(i));
            *self.wants.entry(self.jobs[i].gpus).or_default() += 1;
        }
        Ok(())
    }
}
