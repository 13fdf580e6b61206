//! One pass's starts in the simulator: the jobs in the pass's order,
//! placed through the daemon's pool and backfill rule ([`Easy`]) in the
//! chosen [`Mode`], and the check that spares a pass nothing could use.

use super::engine::{Ran, Running, Sim, UNKNOWN_MS};
use super::held_back::HeldBack;
use crate::scheduler::Placement;
use crate::scheduler::backfill::{Decision, Easy, Mode, RunningRun};

/// Whether the pool would place `a` as it places `b`: it reads a request's
/// GPUs, CPUs and GPU memory only (`scheduler::Pool::choose`,
/// `place_where`, `usable`), not its timeout or memory.
fn placed_alike(a: &crate::task::model::Resources, b: &crate::task::model::Resources) -> bool {
    a.gpus == b.gpus && a.cpus == b.cpus && a.gpu_mem == b.gpu_mem
}

/// A runtime the simulation may plan with: `None` for [`UNKNOWN_MS`].
fn known(ms: i64) -> Option<i64> {
    (ms < UNKNOWN_MS).then_some(ms)
}

impl Sim<'_> {
    /// Each job's age counts from `ages` (ms after the start, as `arrival`)
    /// instead of its arrival: a forecast's task in a retry's backoff
    /// arrives when the backoff ends but ranks by when it was submitted,
    /// as the daemon ranks it.
    pub fn with_ages(mut self, ages: Vec<i64>) -> Self {
        assert_eq!(ages.len(), self.jobs.len(), "one age per job");
        self.ages = Some(ages);
        self
    }

    /// Stops the simulation at `at` (wall clock), whatever is left: a
    /// forecast must answer in time however long the queue. What has not
    /// started by then is reported as never started, and why.
    pub fn deadline(mut self, at: std::time::Instant) -> Self {
        self.deadline = Some(at);
        self
    }

    /// Ends the simulation with an error naming a policy whose call fails
    /// (a trap, or its time, memory or fuel limit), as `simulate` wants it:
    /// going on without it would answer another question, and whether a
    /// call passes its time limit depends on the machine's speed. (A
    /// forecast goes on as the daemon does, with the member's `on_failure`.)
    pub fn refusing_failures(mut self) -> Self {
        self.refuse_failures = true;
        self
    }

    /// Job `i`'s place in `waiting`: priority class, age, id.
    pub(super) fn key(&self, i: usize) -> (i64, i64, i64, usize) {
        let job = &self.jobs[i];
        let age = self.ages.as_ref().map_or(job.arrival, |a| a[i]);
        (-job.priority.rank(), age, job.id, i)
    }

    /// Whether no waiting job could start now, whatever order the chain
    /// gave: every slot is taken, or (without sharing) fewer GPUs are free
    /// than the smallest waiting job wants, closures by policies aside.
    /// Such a pass is not made. Nothing it could start, and nothing frees
    /// until a run ends (an event of its own, with its own pass), so the
    /// schedule is the one every pass would give; only `passes` counts fewer.
    pub(super) fn nothing_can_start(&self) -> bool {
        // A pass can preempt whatever is free: with a chain and a
        // preemptible run, every pass is made (as the daemon makes it).
        if self.chain.is_some()
            && (self.runs.running().iter()).any(|r| self.jobs[r.job].preemptible)
        {
            return false;
        }
        if self.pool.slots == 0 {
            return true;
        }
        if self.pool.share {
            return false;
        }
        match self.wants.first_key_value() {
            Some((&least, _)) => {
                least > 0 && self.opts.machine.gpus.saturating_sub(self.busy) < least
            }
            None => true,
        }
    }

    /// Starts `order` in order while it fits, backfilling by the mode.
    pub(super) fn dispatch(&mut self, order: &[usize], now: i64) {
        let runs = self
            .runs
            .running()
            .iter()
            .map(|r| RunningRun {
                run: self.jobs[r.job].id,
                placement: r.placement.clone(),
                end: known(self.jobs[r.job].estimate).map(|e| r.start.saturating_add(e)),
            })
            .collect();
        let mut easy = Easy::new(self.opts.order, now, runs);
        let mut free = self.free_gpus();
        let mut zero_gpu_left = order.iter().filter(|&&i| self.jobs[i].gpus == 0).count();
        let mut held_back = HeldBack::default();
        for &i in order {
            let job = &self.jobs[i];
            if self.pool.slots == 0 {
                break;
            }
            zero_gpu_left -= usize::from(job.gpus == 0);
            // Held back by its user's `[quotas]`: passed over, as the
            // daemon passes it over (no reservation is made for it).
            if self.over_quota(i) {
                continue;
            }
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
            let estimate = known(job.estimate);
            // Known to wait as a job before it did (see `held_back`): only
            // without sharing, and once the head's reservation is made.
            let memo = !self.pool.share && easy.reservation.is_some();
            let specs = &self.specs;
            let same = |j: usize| placed_alike(&specs[j].resources, res);
            if memo && held_back.must_wait(same, estimate) {
                continue;
            }
            match easy.decide(&mut self.pool, job.id, res, None, estimate) {
                Decision::Start(placement, _) => {
                    easy.started(job.id, job.id);
                    self.start(i, now, placement);
                    free = self.free_gpus();
                    held_back.clear();
                }
                Decision::Reserved(_) | Decision::NoFit | Decision::Held(_) => {
                    if memo {
                        held_back.waited(i, same, estimate);
                    }
                }
            }
        }
    }

    /// Whether job `i`'s user is at a `[quotas]` limit: as many runs as
    /// `running` allows, or GPUs held plus the job's past `gpus`.
    fn over_quota(&self, i: usize) -> bool {
        if !self.cfg.quotas.any() {
            return false;
        }
        let job = &self.jobs[i];
        let (limits, _) = self.cfg.quotas.of(&job.user);
        let (runs, gpus) = self.held.get(&job.user).copied().unwrap_or_default();
        limits.running.is_some_and(|max| runs >= max)
            || limits
                .gpus
                .is_some_and(|max| job.gpus > 0 && gpus + job.gpus > max)
    }

    /// Counts (`on`) or releases a run of job `i` on `gpus` GPUs against
    /// its user's `[quotas]`.
    pub(super) fn hold(&mut self, i: usize, gpus: u32, on: bool) {
        let user = std::sync::Arc::clone(&self.jobs[i].user);
        let held = self.held.entry(user).or_default();
        if on {
            *held = (held.0 + 1, held.1 + gpus);
        } else {
            *held = (held.0.saturating_sub(1), held.1.saturating_sub(gpus));
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
        self.waiting.remove(&self.key(i));
        if let Some(n) = self.wants.get_mut(&job.gpus) {
            *n -= 1;
            if *n == 0 {
                self.wants.remove(&job.gpus);
            }
        }
        self.busy += placement.gpus.len() as u32;
        self.pool.stagger.started(&placement.gpus, job.id, now);
        let end = now.saturating_add(self.remaining[i]);
        self.hold(i, placement.gpus.len() as u32, true);
        self.out.runs.push(Ran {
            job: i,
            start: now,
            end,
            gpus: placement.gpus.clone(),
            preempted: false,
        });
        self.runs.start(Running {
            job: i,
            start: now,
            end,
            placement,
        });
    }
}
