//! Start: the one path from candidates in start order to runs, shared by the
//! built-in order (priority class, then age) and the policy chain's ranking.
//!
//! The chain is asked at most every [`EVALUATE_EVERY`]: a burst of submits
//! or of runs ending is one evaluation, not one per event. Between
//! evaluations a freed slot is filled from the last [`Ranking`], so a slot
//! never waits for the chain; a task submitted since is ranked by the next
//! evaluation (at most `EVALUATE_EVERY` later).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::daemon::state::{Daemon, lock};
use crate::scheduler::backfill::Easy;
use crate::store::{Candidate, TaskState};

/// How often, at most, a pass asks the chain when kicks come faster (a
/// burst of submits or of short runs ending). Long enough to batch a loop of
/// `nightjar submit` calls, short enough that a person does not notice.
pub const EVALUATE_EVERY: Duration = Duration::from_millis(25);

/// Most ids fetched per query when filling slots from a ranking.
const MAX_CHUNK: usize = 256;

/// The longest a ranking is reused, however costly a pass is.
pub const EVALUATE_AT_MOST_EVERY: Duration = Duration::from_secs(2);

/// How long a ranking is reused after a pass that took `cost`: at least
/// [`EVALUATE_EVERY`], and eight times the pass's cost, so asking the chain
/// takes at most a ninth of a core however long the queue (a 10,000-task
/// queue is not evaluated after every burst of runs ending); slots freed
/// meanwhile are filled from the ranking at once. A task submitted meanwhile
/// waits for the next evaluation: at most 2 s ([`EVALUATE_AT_MOST_EVERY`]).
pub fn window_after(cost: Duration) -> Duration {
    (cost * 8).clamp(EVALUATE_EVERY, EVALUATE_AT_MOST_EVERY)
}

/// The chain's last evaluation: the eligible tasks in start order.
#[derive(Debug, Default)]
pub struct Ranking {
    /// When the chain evaluated it (Unix ms).
    pub at: i64,
    /// How long it is reused (ms; 0: [`EVALUATE_EVERY`]).
    pub window_ms: i64,
    /// Eligible tasks in start order: (task, summed score).
    pub order: Vec<(i64, i64)>,
    /// Per task, each policy's score (for the `placed` event).
    pub parts: HashMap<i64, Vec<(std::sync::Arc<str>, i32)>>,
}

impl Ranking {
    /// Whether the chain should be asked again at `now`: the window has
    /// passed, or the clock stepped back past the evaluation (else a clock
    /// set back an hour would keep this ranking, and keep every task
    /// submitted since from starting, for that hour).
    pub fn stale(&self, now: i64) -> bool {
        !(0..self.window()).contains(&now.saturating_sub(self.at))
    }

    /// How long it is reused (ms).
    pub fn window(&self) -> i64 {
        self.window_ms.max(EVALUATE_EVERY.as_millis() as i64)
    }

    /// Why a task starts now, for its `placed` event.
    pub fn because(&self, id: i64, score: i64) -> String {
        let parts = self.parts.get(&id).map(Vec::as_slice).unwrap_or(&[]);
        let terms: Vec<String> = parts.iter().map(|(n, s)| format!("{n} {s}")).collect();
        if terms.is_empty() {
            format!("score {score} (no policy scored it)")
        } else {
            format!("score {score} = {}", terms.join(" + "))
        }
    }
}

/// What one dispatch did.
#[derive(Debug, Default)]
pub struct Dispatched {
    /// Something started.
    pub started: bool,
    /// Tasks that could not start now (no slot, no fit, yielding), in order.
    pub waiting: Vec<i64>,
}

impl Daemon {
    /// Starts `order` (candidates with their score) in order while slots
    /// remain; `because` says why a task starts now (made only for a task
    /// that may start, not for every one in a long queue). The first task
    /// that does not fit (GPUs, cores) reserves its start and later ones are
    /// backfilled around it (`[scheduler] order`: passed over under
    /// `first-fit`, blocking under `strict`); a preempted
    /// task yields to the task it was preempted for until that one has started.
    /// `easy` is the pass's backfill state: the first task that does not
    /// fit reserves its start, and later ones start only if they do not
    /// delay it. What the executor held of the runs started (a batch
    /// system's job array) is submitted before it returns, whatever it
    /// returns.
    pub(in crate::daemon) fn dispatch<'a>(
        self: &Arc<Self>,
        order: impl IntoIterator<Item = (&'a Candidate, i64)>,
        because: impl Fn(i64, i64) -> Option<String>,
        easy: &mut Easy,
    ) -> anyhow::Result<Dispatched> {
        let out = self.dispatch_each(order, because, easy);
        self.runs.executor().flush(self);
        out
    }

    /// [`Daemon::dispatch`]'s starts, one candidate after another.
    fn dispatch_each<'a>(
        self: &Arc<Self>,
        order: impl IntoIterator<Item = (&'a Candidate, i64)>,
        because: impl Fn(i64, i64) -> Option<String>,
        easy: &mut Easy,
    ) -> anyhow::Result<Dispatched> {
        let yields = lock(&self.pipeline.chain_status).yields_to.clone();
        let mut out = Dispatched::default();
        for (c, score) in order {
            if lock(&self.pool).slots == 0
                || self.yielding(c.id, &yields)?
                || self.quota_block(c).is_some()
            {
                lock(&self.pipeline.place_reasons).remove(&c.id);
                out.waiting.push(c.id);
                continue;
            }
            if !self.try_start(c, because(c.id, score), easy) {
                out.waiting.push(c.id);
                continue;
            }
            out.started = true;
        }
        Ok(out)
    }

    /// Whether `task` yields: it was preempted for a task still queued.
    fn yielding(&self, task: i64, yields: &HashMap<i64, i64>) -> anyhow::Result<bool> {
        let Some(&for_whom) = yields.get(&task) else {
            return Ok(false);
        };
        let state = self.store().task(for_whom).map(|t| t.state);
        Ok(matches!(state, Ok(TaskState::Queued)))
    }

    /// Fills free slots from the last ranking without asking the chain:
    /// each ranked task still eligible is tried in order.
    pub(in crate::daemon) fn dispatch_ranked(
        self: &Arc<Self>,
        ranking: &mut Ranking,
        now: i64,
    ) -> anyhow::Result<bool> {
        let mut started = false;
        let mut gone: HashSet<i64> = HashSet::new();
        let mut next = 0;
        let mut easy = self.easy(now);
        loop {
            let free = lock(&self.pool).slots as usize;
            if free == 0 || next >= ranking.order.len() {
                break;
            }
            // As many as the free slots (most fit), more once some did not.
            let take = (free * (next / free.max(1) + 1)).clamp(1, MAX_CHUNK);
            let chunk = &ranking.order[next..(next + take).min(ranking.order.len())];
            next += chunk.len();
            let ids: Vec<i64> = chunk.iter().map(|(id, _)| *id).collect();
            let found = self.store().candidates_by_ids(now, &ids)?;
            gone.extend(ids.iter().filter(|id| !found.contains_key(id)));
            let order = chunk
                .iter()
                .filter_map(|(id, score)| found.get(id).map(|c| (c, *score)));
            let d = self.dispatch(
                order,
                |id, score| Some(ranking.because(id, score)),
                &mut easy,
            )?;
            started |= d.started;
            let waiting: HashSet<i64> = d.waiting.into_iter().collect();
            gone.extend(
                ids.iter()
                    .filter(|id| found.contains_key(id) && !waiting.contains(id)),
            );
        }
        // Started, cancelled or held since: not tried again.
        ranking.order.retain(|(id, _)| !gone.contains(id));
        Ok(started)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ranking_is_reused_within_the_batching_window_only() {
        let r = Ranking {
            at: 1_000,
            ..Ranking::default()
        };
        let window = EVALUATE_EVERY.as_millis() as i64;
        assert!(!r.stale(1_000));
        assert!(!r.stale(1_000 + window - 1));
        assert!(r.stale(1_000 + window));
        // A clock that stepped back does not keep the ranking until it
        // catches up: tasks submitted since would not start meanwhile.
        assert!(r.stale(999), "earlier than the evaluation: asked again");
        assert!(r.stale(1_000 - 3_600_000));
    }

    #[test]
    fn a_costly_pass_widens_the_window_to_eight_times_its_cost_within_bounds() {
        assert_eq!(window_after(Duration::from_millis(1)), EVALUATE_EVERY);
        assert_eq!(
            window_after(Duration::from_millis(30)),
            Duration::from_millis(240)
        );
        assert_eq!(window_after(Duration::from_secs(5)), EVALUATE_AT_MOST_EVERY);
        let r = Ranking {
            at: 1_000,
            window_ms: 120,
            ..Ranking::default()
        };
        assert!(!r.stale(1_100));
        assert!(r.stale(1_120));
    }

    #[test]
    fn the_placed_reason_names_each_policy_score_in_chain_order() {
        let mut r = Ranking::default();
        r.parts
            .insert(7, vec![("priority".into(), 40), ("fair-share".into(), -5)]);
        assert_eq!(r.because(7, 35), "score 35 = priority 40 + fair-share -5");
        assert_eq!(r.because(8, 0), "score 0 (no policy scored it)");
    }
}
