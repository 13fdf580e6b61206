//! The simulated runs: those running now and those that ended within the
//! chain's usage window. Every change goes through [`Runs`], which keeps the
//! usage list a chain pass is shown until a run starts, ends or leaves the
//! window, so a pass that changed none hands on the last pass's list (a
//! week of runs rebuilt each pass was a tenth of a simulated pass).

use std::collections::VecDeque;
use std::sync::Arc;

use super::engine::Running;
use super::trace::Job;
use crate::plugins::policy as p;
use crate::store::UsageInfo;

/// The running and recently ended runs.
#[derive(Default)]
pub(super) struct Runs {
    running: Vec<Running>,
    /// Ended within the usage window, oldest end first.
    ended: VecDeque<p::Usage>,
    /// The usage list as last built; `None` once anything changed.
    usage: Option<Arc<[p::Usage]>>,
    /// The projects the rows name.
    table: p::UsageTable,
}

impl Runs {
    /// The running runs.
    pub(super) fn running(&self) -> &[Running] {
        &self.running
    }

    /// Starts `r`.
    pub(super) fn start(&mut self, r: Running) {
        self.usage = None;
        self.running.push(r);
    }

    /// Takes running run `k` out (the last one takes its place).
    pub(super) fn take(&mut self, k: usize) -> Running {
        self.usage = None;
        self.running.swap_remove(k)
    }

    /// Records a run that ended (or was stopped) at `ended_at`.
    pub(super) fn ended(&mut self, job: &Job, started_at: i64, ended_at: i64) {
        self.usage = None;
        let row = (self.table).row(&job.project, job.gpus, started_at, Some(ended_at));
        self.ended.push_back(row);
    }

    /// The runs that ended before the simulation began, oldest first.
    pub(super) fn set_ended(&mut self, ended: &[UsageInfo]) {
        self.usage = None;
        let table = &mut self.table;
        self.ended = (ended.iter())
            .map(|u| table.row(&u.project, u.gpus, u.started_at, u.ended_at))
            .collect();
    }

    /// Forgets the runs that ended before `since`.
    pub(super) fn forget_before(&mut self, since: i64) {
        while (self.ended.front()).is_some_and(|u| u.ended_at.is_some_and(|e| e < since)) {
            self.usage = None;
            self.ended.pop_front();
        }
    }

    /// The usage a chain pass is shown: the ended runs, oldest first, then
    /// the running ones; and the projects they name.
    pub(super) fn usage(&mut self, jobs: &[Job]) -> (Arc<[p::Usage]>, Arc<[Arc<str>]>) {
        if let Some(u) = &self.usage {
            return (Arc::clone(u), self.table.names());
        }
        let table = &mut self.table;
        let running = self.running.iter().map(|r| {
            let job = &jobs[r.job];
            table.row(&job.project, job.gpus, r.start, None)
        });
        let all: Arc<[p::Usage]> = self.ended.iter().copied().chain(running).collect();
        self.usage = Some(Arc::clone(&all));
        (all, self.table.names())
    }
}
