//! The simulator's event loop: the daemon's scheduling pieces on a virtual
//! clock, with no store and no processes. At each event time, runs that end
//! end first, then jobs that arrive are queued, then one pass: the policy
//! chain's ranking (the same components, through the same snapshot and
//! combine as the daemon's passes) or the built-in order (priority class,
//! then age, then id), placed through the same pool and backfill rule
//! ([`Easy`]) in the chosen [`Mode`]. A job holds its GPUs from its start
//! to start + duration. Nothing sleeps and nothing reads the wall clock, so
//! one trace and config give the same schedule every time.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use super::trace::Job;
use crate::config::Config;
use crate::daemon::pipeline::chain::Chain;
use crate::daemon::pipeline::combine::{self, Judgement, Ranked};
use crate::plugins::policy as p;
use crate::scheduler::backfill::{Decision, Easy, Mode, RunningRun};
use crate::scheduler::{Placement, Pool, PoolGpu, Stagger};
use crate::store::{Candidate, RunningInfo, UsageInfo};
use crate::task::model::{CommandSpec, Owner, Resources, RetryPolicy, TaskSpec};

/// One chain pass in this many (after the first three) asks twice, to
/// catch a policy that is not pure.
const CHECK_EVERY: u64 = 256;

/// The policy whose verdicts differ between two answers, if one does.
fn first_difference(
    a: &HashMap<(i64, String), (String, String)>,
    b: &HashMap<(i64, String), (String, String)>,
) -> Option<String> {
    let mut differ: Vec<&String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|((_, p), _)| p)
        .chain(b.keys().filter(|k| !a.contains_key(*k)).map(|(_, p)| p))
        .collect();
    differ.sort();
    differ.first().map(|p| p.to_string())
}

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
}

/// A run in progress.
struct Running {
    job: usize,
    start: i64,
    end: i64,
    placement: Placement,
}

/// The state of one simulation.
pub struct Sim<'a> {
    cfg: &'a Config,
    jobs: &'a [Job],
    specs: Vec<Arc<TaskSpec>>,
    opts: Options,
    chain: Option<&'a mut Chain>,
    pool: Pool,
    /// Waiting jobs in the built-in order: (priority rank reversed, arrival, id, index).
    waiting: BTreeSet<(i64, i64, i64, usize)>,
    running: Vec<Running>,
    /// Runs that ended within the chain's usage window, oldest first.
    ended: VecDeque<UsageInfo>,
    /// The GPUs the chain closed in its last pass, by whom.
    closed_by: HashMap<u32, Vec<String>>,
    /// When the chain asked to look again.
    wake: Option<i64>,
    out: Outcome,
}

/// The spec a trace job stands for: what the snapshot and placement read.
fn spec_of(job: &Job) -> TaskSpec {
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
                .map(|i| PoolGpu {
                    uuid: format!("SIM-{i}"),
                    mem_total: m.gpu_mem,
                    ..PoolGpu::unmonitored(i)
                })
                .collect(),
            cpus: Vec::new(),
            share: m.share,
            policy_closed: Default::default(),
            stagger: Stagger::default(),
        };
        Sim {
            cfg,
            jobs,
            specs: jobs.iter().map(|j| Arc::new(spec_of(j))).collect(),
            opts,
            chain,
            pool,
            waiting: BTreeSet::new(),
            running: Vec::new(),
            ended: VecDeque::new(),
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
        let mut arrivals: Vec<usize> = (0..self.jobs.len()).collect();
        arrivals.sort_by_key(|&i| (self.jobs[i].arrival, self.jobs[i].id));
        let mut next = 0;
        let t0 = self.opts.start_ms;
        let Some(&first) = arrivals.first() else {
            return Ok(self.out);
        };
        let mut now = t0.saturating_add(self.jobs[first].arrival);
        loop {
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
                        self.waiting
                            .insert((-job.priority.rank(), job.arrival, job.id, i));
                    }
                }
            }
            if !self.waiting.is_empty() {
                self.pass(now)?;
            }
            let ends = self.running.iter().map(|r| r.end).min();
            let arrives = arrivals
                .get(next)
                .map(|&i| t0.saturating_add(self.jobs[i].arrival));
            let wake = self.wake.filter(|w| *w > now && !self.waiting.is_empty());
            match [ends, arrives, wake].into_iter().flatten().min() {
                Some(t) => now = t,
                None => break,
            }
        }
        let why = if self.chain.is_some() {
            "still waiting when nothing else was left to happen (deferred or closed by a policy)"
        } else {
            "still waiting when nothing else was left to happen"
        };
        let left: Vec<usize> = self.waiting.iter().map(|w| w.3).collect();
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
        while i < self.running.len() {
            if self.running[i].end > now {
                i += 1;
                continue;
            }
            let r = self.running.swap_remove(i);
            self.pool.give_back(&r.placement);
            let job = &self.jobs[r.job];
            self.ended.push_back(UsageInfo {
                project: job.project.to_string(),
                gpus: job.gpus,
                started_at: r.start,
                ended_at: Some(r.end),
            });
        }
        let since = now.saturating_sub(window);
        while self
            .ended
            .front()
            .is_some_and(|u| u.ended_at.unwrap_or(now) < since)
        {
            self.ended.pop_front();
        }
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
        self.dispatch(&order, now);
        Ok(())
    }

    /// Starts `order` in order while it fits, backfilling by the mode.
    fn dispatch(&mut self, order: &[usize], now: i64) {
        let runs = self
            .running
            .iter()
            .map(|r| RunningRun {
                run: self.jobs[r.job].id,
                placement: r.placement.clone(),
                end: Some(r.start.saturating_add(self.jobs[r.job].estimate)),
            })
            .collect();
        let mut easy = Easy::new(self.opts.order, now, runs);
        let mut free = self.free_gpus();
        let mut zero_gpu_left = order.iter().filter(|&&i| self.jobs[i].gpus == 0).count();
        for &i in order {
            let job = &self.jobs[i];
            if self.pool.slots == 0 {
                break;
            }
            zero_gpu_left -= usize::from(job.gpus == 0);
            let settled = easy.reservation.is_some() || self.opts.order == Mode::PassOver;
            if settled && self.opts.order == Mode::Strict {
                break;
            }
            // Without sharing, a job wanting more GPUs than are free cannot
            // start now; once the head holds its reservation (or there is
            // none to make), only such a cheap check is needed.
            if !self.pool.share && job.gpus as usize > free && settled {
                if free == 0 && zero_gpu_left == 0 {
                    break;
                }
                continue;
            }
            let res = &self.specs[i].resources;
            match easy.decide(&mut self.pool, job.id, res, None, Some(job.estimate)) {
                Decision::Start(placement, _) => {
                    easy.started(job.id, job.id);
                    self.start(i, now, placement);
                    free = self.free_gpus();
                }
                Decision::Reserved(_) | Decision::NoFit | Decision::Held(_) => {}
            }
        }
    }

    /// Open GPUs no run holds.
    fn free_gpus(&self) -> usize {
        self.pool
            .gpus
            .iter()
            .filter(|g| self.pool.gpu_unusable(g, None).is_none())
            .count()
    }

    /// Starts job `i` at `now` on `placement`.
    fn start(&mut self, i: usize, now: i64, placement: Placement) {
        let job = &self.jobs[i];
        self.waiting
            .remove(&(-job.priority.rank(), job.arrival, job.id, i));
        let end = now.saturating_add(job.duration);
        self.out.runs.push(Ran {
            job: i,
            start: now,
            end,
            gpus: placement.gpus.clone(),
        });
        self.running.push(Running {
            job: i,
            start: now,
            end,
            placement,
        });
    }

    /// Asks the chain at `now`: the eligible jobs in start order, or `None`
    /// when a failing `closed` policy holds everything this pass. The first
    /// passes, and one in [`CHECK_EVERY`] after, ask twice: policies must be
    /// pure, and one whose two answers differ is refused by name.
    fn chain_order(&mut self, now: i64) -> Result<Option<Vec<usize>>, String> {
        self.out.chain_passes += 1;
        let max = self.cfg.plugins.max_queue;
        let queue: Vec<Candidate> = self
            .waiting
            .iter()
            .take(max)
            .map(|&(_, arrival, id, i)| Candidate {
                id,
                spec: Arc::clone(&self.specs[i]),
                submitted_at: self.opts.start_ms.saturating_add(arrival),
                eligible_at: self.opts.start_ms.saturating_add(arrival),
                attempts: 0,
                needs_gpu_free: None,
            })
            .collect();
        let running: Vec<RunningInfo> = self
            .running
            .iter()
            .map(|r| {
                let job = &self.jobs[r.job];
                RunningInfo {
                    id: job.id,
                    name: job.name.to_string(),
                    project: job.project.to_string(),
                    priority: job.priority,
                    gpus: r.placement.gpus.clone(),
                    started_at: r.start,
                    preemptible: job.preemptible,
                }
            })
            .collect();
        let mut usage: Vec<UsageInfo> = self.ended.iter().cloned().collect();
        usage.extend(self.running.iter().map(|r| UsageInfo {
            project: self.jobs[r.job].project.to_string(),
            gpus: self.jobs[r.job].gpus,
            started_at: r.start,
            ended_at: None,
        }));
        let gpus = self.gpu_views();
        let snap = Arc::new(crate::daemon::pipeline::snapshot::snapshot(
            self.cfg, now, &queue, &running, gpus, &usage,
        ));
        let Some(chain) = self.chain.as_deref_mut() else {
            return Ok(None);
        };
        let answer = chain.evaluate(Arc::clone(&snap), now);
        let n = self.out.chain_passes;
        if n <= 3 || n.is_multiple_of(CHECK_EVERY) {
            let again = chain.evaluate(snap, now);
            if let Some(plugin) = first_difference(&answer.verdicts, &again.verdicts) {
                return Err(format!(
                    "policy {plugin} answered the same snapshot twice, differently: its answers depend on something besides the snapshot (a clock, randomness, state kept between calls), so no simulation with it could be repeated; make it pure or take it out of plugins.chain"
                ));
            }
        }
        self.wake = answer.wake_at;
        self.closed_by = answer.closed_by.clone();
        self.pool.policy_closed = answer.closed_gpus.clone().into_iter().collect();
        if answer.hold_all.is_some() {
            return Ok(None);
        }
        let mut order: Vec<(Ranked, usize)> = Vec::with_capacity(queue.len());
        for (c, &(_, _, _, i)) in queue.iter().zip(self.waiting.iter()) {
            let judgement = answer
                .judgements
                .get(&c.id)
                .cloned()
                .unwrap_or(Judgement::Eligible(0));
            if let Judgement::Eligible(score) = judgement {
                let rank = Ranked {
                    id: c.id,
                    score,
                    priority: c.spec.priority.rank(),
                    submitted_at: c.submitted_at,
                };
                order.push((rank, i));
            }
        }
        order.sort_by(|a, b| combine::start_order(&a.0, &b.0));
        Ok(Some(order.into_iter().map(|(_, i)| i).collect()))
    }

    /// The GPUs as the chain sees them: memory reserved by runs, busy or
    /// idle, and a simple thermal model (35 °C idle, 65 °C busy).
    fn gpu_views(&self) -> Vec<p::Gpu> {
        let mut draw: HashMap<u32, f64> = HashMap::new();
        for r in &self.running {
            let w = self.jobs[r.job].power_w.unwrap_or(0.0);
            for g in &r.placement.gpus {
                *draw.entry(*g).or_default() += w;
            }
        }
        self.pool
            .gpus
            .iter()
            .map(|g| p::Gpu {
                index: g.index,
                uuid: g.uuid.clone(),
                name: "simulated GPU".into(),
                mem_total: g.mem_total.unwrap_or(0),
                mem_used: g.reserved,
                mem_reserved: g.reserved,
                util: if g.users > 0 { 100 } else { 0 },
                temperature: if g.users > 0 { 65 } else { 35 },
                power: (draw.get(&g.index).copied().unwrap_or(0.0) * 1000.0) as u32,
                healthy: true,
                closed_by: self.closed_by.get(&g.index).cloned().unwrap_or_default(),
            })
            .collect()
    }
}
