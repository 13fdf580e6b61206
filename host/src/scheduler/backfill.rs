//! EASY backfill (pure): the highest-ranked task that does not fit now gets
//! a reservation, the earliest time it fits once the runs ahead of it end
//! (each run's end is its start plus its runtime estimate), and the GPUs it
//! will take then. A lower-ranked task starts now only if it is expected to
//! end before that time, or if it leaves the head room at that time (it uses
//! GPUs, memory, cores and a slot the head will not need), so the head is
//! never started later than without backfill.
//!
//! What is not known is decided against the smaller tasks, never the head:
//! a running run without an estimate is taken to run for ever (the head's
//! start becomes unknown: then nothing is started for being short, only
//! tasks that leave the head its room), and a task without an estimate can
//! only start on what the head will not need. A head that would not fit even
//! on an idle machine (it asks for more GPUs than are open) reserves nothing.
//!
//! Runs take the clock from the caller, so the simulator and the tests drive
//! it with a simulated one.

use super::{Placement, Pool};
use crate::task::model::Resources;

/// A run holding resources, as the reservation sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningRun {
    /// Its id (a task id in the simulator).
    pub run: i64,
    /// What it holds.
    pub placement: Placement,
    /// When it is expected to end (Unix ms); `None`: not known.
    pub end: Option<i64>,
}

/// The head job's reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// The task it is for.
    pub task: i64,
    /// When it is expected to start (Unix ms); `None`: a run it waits for has
    /// no runtime estimate.
    pub start: Option<i64>,
    /// The GPUs it will take then.
    pub gpus: Vec<u32>,
    /// The runs whose end it waits for, in order of their expected end.
    pub after: Vec<i64>,
    /// Of those, the ones with no estimate.
    pub unknown: Vec<i64>,
    /// The pool as expected at `start`, with the long backfills taken.
    at_start: Pool,
    res: Resources,
    peak: Option<u64>,
}

/// Why a task was started past the head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backfilled {
    /// It is expected to end (at `end`) before the head's start.
    EndsBefore {
        /// Its expected end.
        end: i64,
        /// The head.
        head: i64,
        /// The head's expected start.
        start: i64,
    },
    /// It uses nothing the head will need at its start.
    Beside {
        /// The head.
        head: i64,
    },
}

/// Why a task waits behind the head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behind {
    /// It would still run at the head's start and take what the head needs.
    WouldDelay {
        /// The head.
        head: i64,
        /// The head's expected start (`None`: unknown).
        start: Option<i64>,
        /// The task's own estimate, ms (`None`: it has none).
        estimate: Option<i64>,
    },
}

/// What to do with one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Start it here; `Some` when it was backfilled past the head.
    Start(Placement, Option<Backfilled>),
    /// It does not fit now; it is the head and this is its reservation.
    Reserved(Reservation),
    /// It does not fit now (and is not the head, or backfill is off).
    NoFit,
    /// It would fit, but would delay the head.
    Held(Behind),
}

/// How a task that does not fit is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Passed over: later tasks start in its place (`[scheduler] order =
    /// "first-fit"`); a big task can wait for ever.
    PassOver,
    /// It reserves its start and nothing passes it (strict order: the
    /// baseline backfill is measured against).
    Strict,
    /// It reserves its start; later tasks start if they do not delay it.
    Easy,
}

/// One pass's backfill state: the runs and their expected ends, and the
/// reservation once a task did not fit.
#[derive(Debug, Clone)]
pub struct Easy {
    /// What a task that does not fit means for those after it.
    pub mode: Mode,
    /// The clock (Unix ms).
    pub now: i64,
    running: Vec<RunningRun>,
    /// The head's reservation, once there is one.
    pub reservation: Option<Reservation>,
}

impl Easy {
    /// A pass at `now` with the runs that hold resources.
    pub fn new(mode: Mode, now: i64, running: Vec<RunningRun>) -> Easy {
        Easy {
            mode,
            now,
            running,
            reservation: None,
        }
    }

    /// Decides one candidate, in start order: places it in `pool`, or says
    /// why it waits. `estimate` (ms) is the task's expected runtime.
    pub fn decide(
        &mut self,
        pool: &mut Pool,
        task: i64,
        res: &Resources,
        peak: Option<u64>,
        estimate: Option<i64>,
    ) -> Decision {
        let now = self.now;
        let ends = estimate.map(|e| now.saturating_add(e.max(0)));
        let Some(r) = self.reservation.as_mut() else {
            if let Some(p) = pool.place_after(res, peak) {
                self.running.push(RunningRun {
                    run: -task,
                    placement: p.clone(),
                    end: ends,
                });
                return Decision::Start(p, None);
            }
            if self.mode == Mode::PassOver {
                return Decision::NoFit;
            }
            return match reserve(pool, &self.running, task, res, peak, now) {
                Some(r) => {
                    self.reservation = Some(r.clone());
                    Decision::Reserved(r)
                }
                None => Decision::NoFit,
            };
        };
        if self.mode == Mode::Strict {
            return Decision::Held(Behind::WouldDelay {
                head: r.task,
                start: r.start,
                estimate,
            });
        }
        if let (Some(end), Some(start)) = (ends, r.start)
            && end <= start
        {
            return match pool.place_after(res, peak) {
                Some(p) => Decision::Start(
                    p,
                    Some(Backfilled::EndsBefore {
                        end,
                        head: r.task,
                        start,
                    }),
                ),
                None => Decision::NoFit,
            };
        }
        // It would still run at the head's start: only on what the head
        // will not need then. GPUs the head will take are tried last.
        let placed = pool
            .place_avoiding(res, peak, &r.gpus)
            .or_else(|| pool.place_after(res, peak));
        let Some(p) = placed else {
            return Decision::NoFit;
        };
        let taken = Taken::take(&mut r.at_start, &p);
        if r.at_start.could_place(&r.res, r.peak) {
            return Decision::Start(p, Some(Backfilled::Beside { head: r.task }));
        }
        taken.undo(&mut r.at_start);
        pool.give_back(&p);
        Decision::Held(Behind::WouldDelay {
            head: r.task,
            start: r.start,
            estimate,
        })
    }
}

impl Easy {
    /// The task started in this pass as `-task` is run `run`.
    pub fn started(&mut self, task: i64, run: i64) {
        for r in self.running.iter_mut().filter(|r| r.run == -task) {
            r.run = run;
        }
    }

    /// The task placed in this pass could not start after all.
    pub fn not_started(&mut self, task: i64) {
        self.running.retain(|r| r.run != -task);
    }
}

/// The head's reservation: runs are given back in order of their expected
/// end (unknown ends last) until the head fits.
fn reserve(
    pool: &Pool,
    running: &[RunningRun],
    task: i64,
    res: &Resources,
    peak: Option<u64>,
    now: i64,
) -> Option<Reservation> {
    let mut sim = pool.clone();
    // A stagger passes within seconds; it is not what the head waits for.
    sim.stagger = Default::default();
    let mut order: Vec<&RunningRun> = running.iter().collect();
    order.sort_by_key(|r| (r.end.is_none(), r.end, r.run));
    let (mut start, mut after, mut unknown) = (Some(now), Vec::new(), Vec::new());
    for r in order {
        if sim.could_place(res, peak) {
            break;
        }
        sim.give_back(&r.placement);
        after.push(r.run);
        match r.end {
            Some(e) => start = start.map(|s| s.max(e)),
            None => {
                unknown.push(r.run);
                start = None;
            }
        }
    }
    // With every run given back the pool is the idle machine: a head that
    // does not fit even there reserves nothing.
    let chosen = sim.choose(res, peak, |_| true)?;
    let gpus = chosen.iter().map(|&i| sim.gpus[i].index).collect();
    Some(Reservation {
        task,
        start,
        gpus,
        after,
        unknown,
        at_start: sim,
        res: res.clone(),
        peak,
    })
}

impl Pool {
    /// As [`Pool::place_after`], using none of the GPUs in `avoid`.
    pub fn place_avoiding(
        &mut self,
        res: &Resources,
        peak: Option<u64>,
        avoid: &[u32],
    ) -> Option<Placement> {
        let avoided = super::member(avoid);
        self.place_where(res, peak, |g| !avoided(g.index))
    }
}

/// A placement taken from the pool a reservation expects at its start, with
/// what it changed, so a backfill that would delay the head is undone
/// exactly (no copy of the pool per candidate).
struct Taken {
    slots: u32,
    cpus: Vec<u32>,
    gpus: Vec<(usize, u32, u64, bool)>,
}

impl Taken {
    /// Takes `p` from `pool` as an adopted run would.
    fn take(pool: &mut Pool, p: &Placement) -> Taken {
        let held = super::member(&p.gpus);
        let gpus = (pool.gpus.iter().enumerate())
            .filter(|(_, g)| held(g.index))
            .map(|(i, g)| (i, g.users, g.reserved, g.exclusive))
            .collect();
        let taken = Taken {
            slots: pool.slots,
            cpus: pool.cpus.clone(),
            gpus,
        };
        pool.take_adopted(p);
        taken
    }

    /// Puts `pool` back as it was before [`Taken::take`].
    fn undo(self, pool: &mut Pool) {
        pool.slots = self.slots;
        pool.cpus = self.cpus;
        for (i, users, reserved, exclusive) in self.gpus {
            let g = &mut pool.gpus[i];
            (g.users, g.reserved, g.exclusive) = (users, reserved, exclusive);
        }
    }
}

#[cfg(test)]
#[path = "backfill_tests.rs"]
mod tests;
