//! What a forecast hands the engine besides a trace (`nightjar estimate`,
//! `daemon/query/forecast.rs`): the live daemon's pool, the tasks' own
//! specs, the usage before now, the runs in progress, the jobs whose
//! start ends the play, and a bound on the chain's wake-ups.

use std::sync::Arc;

use super::engine::{Running, Sim};
use crate::scheduler::{Placement, Pool};
use crate::store::UsageInfo;
use crate::task::model::TaskSpec;

impl Sim<'_> {
    /// Simulates on `pool` (a live daemon's, as it is now) instead of
    /// `opts.machine`'s GPUs; runs it holds are [`Sim::adopt`]ed.
    pub fn on_pool(mut self, pool: Pool) -> Self {
        self.pool = pool;
        self
    }

    /// The policies see `specs` (one per job, the tasks' own) instead of
    /// specs made from the trace's columns. A job's name and project are
    /// its spec's (the snapshot hands on the job's shared copies of them).
    pub fn with_specs(mut self, specs: Vec<Arc<TaskSpec>>) -> Self {
        assert_eq!(specs.len(), self.jobs.len(), "one spec per job");
        assert!(
            (specs.iter().zip(self.jobs))
                .all(|(s, j)| s.name == *j.name && s.project == *j.project),
            "a job's name and project are its spec's"
        );
        self.specs = specs;
        self
    }

    /// The runs that ended before the simulation begins, oldest first (the
    /// chain's usage window reads them).
    pub fn with_usage(mut self, ended: Vec<UsageInfo>) -> Self {
        self.runs.set_ended(&ended);
        self
    }

    /// Job `i` has been running since `start` on `placement` (already taken
    /// from the pool): it ends at `start` + its duration and never queues.
    pub fn adopt(mut self, i: usize, start: i64, placement: Placement) -> Self {
        self.adopted[i] = true;
        self.busy += placement.gpus.len() as u32;
        self.hold(i, placement.gpus.len() as u32, true);
        let end = start.saturating_add(self.jobs[i].duration);
        self.runs.start(Running {
            job: i,
            start,
            end,
            placement,
        });
        self
    }

    /// Stops the simulation once every job in `targets` has started (a
    /// forecast of a few tasks need not play the whole queue out).
    pub fn watch(mut self, targets: Vec<usize>) -> Self {
        self.targets = Some(targets);
        self
    }

    /// Follows at most `n` of the chain's wake-ups in all (a forecast must
    /// end soon whatever a policy asks; see `wakes.rs`).
    pub fn wake_budget(mut self, n: u64) -> Self {
        self.wake_budget = Some(n);
        self
    }

    /// Whether every watched job has started.
    pub(super) fn targets_started(&self) -> bool {
        self.targets.as_ref().is_some_and(|t| {
            t.iter()
                .all(|&i| self.adopted[i] || self.out.runs.iter().any(|r| r.job == i))
        })
    }
}
