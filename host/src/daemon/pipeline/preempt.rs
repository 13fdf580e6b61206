//! Preemption: the requests of the chain that the host honours, only when
//! they are worth their cost (the victim is preemptible, has run long
//! enough, was not preempted lately, and a waiting task would use what it
//! frees). Refusals are kept for `why`.

use crate::daemon::pipeline::policy_pass::cap;
use crate::daemon::state::{Daemon, lock};
use crate::store::{Candidate, RunningInfo};

impl Daemon {
    /// Honours the preemption requests that are worth their cost: the victim
    /// is preemptible, has run `plugins.preempt_min_runtime` since it last
    /// started, was not preempted within that time, and a task that may start
    /// now would use what it frees. Refusals are kept for `why`; returns when
    /// a request refused for its timing may be honoured.
    pub(in crate::daemon) fn preempt(
        &self,
        requests: &[(i64, String)],
        running: &[RunningInfo],
        waiting: &[&Candidate],
        now: i64,
    ) -> anyhow::Result<Option<i64>> {
        let min_ms = self.cfg.plugins.preempt_min_runtime.as_millis() as i64;
        {
            // Forget what no longer matters: refusals of tasks that stopped
            // running, preemptions older than the window.
            let mut s = lock(&self.pipeline.chain_status);
            s.refused_preemptions
                .retain(|t, _| running.iter().any(|r| r.id == *t));
            s.preempted_at.retain(|_, at| now - *at < min_ms);
        }
        let mut again: Option<i64> = None;
        let mut retry_at = |t: i64| again = Some(again.map_or(t, |a| a.min(t)));
        let mut seen = std::collections::HashSet::new();
        for (task, reason) in requests {
            if !seen.insert(*task) {
                continue;
            }
            let refuse = |why: String| {
                let mut s = lock(&self.pipeline.chain_status);
                s.refused_preemptions
                    .insert(*task, (format!("{reason}: not honoured: {why}"), now));
            };
            let Some(victim) = running.iter().find(|r| r.id == *task) else {
                continue;
            };
            if !victim.preemptible {
                refuse("the task is not preemptible".into());
                continue;
            }
            let ran = now - victim.started_at;
            if ran < min_ms {
                retry_at(victim.started_at.saturating_add(min_ms));
                refuse(format!(
                    "it has run {} of the {} plugins.preempt_min_runtime",
                    crate::time::fmt_span(ran),
                    crate::time::fmt_span(min_ms)
                ));
                continue;
            }
            let last = lock(&self.pipeline.chain_status)
                .preempted_at
                .get(task)
                .copied();
            if let Some(at) = last.filter(|at| now - at < min_ms) {
                retry_at(at.saturating_add(min_ms));
                refuse(format!(
                    "it was preempted {} ago; at most once per plugins.preempt_min_runtime",
                    crate::time::fmt_span(now - at)
                ));
                continue;
            }
            let freed = lock(&self.runs.placed)
                .values()
                .find(|h| h.task == *task)
                .map(|h| h.placement.clone());
            let Some(freed) = freed else { continue };
            let mut pool = lock(&self.pool).clone();
            pool.give_back(&freed);
            let user = waiting.iter().find(|c| {
                pool.place_after(&c.spec.resources, c.needs_gpu_free)
                    .is_some()
            });
            let Some(user) = user else {
                refuse("no waiting task that may start now would use what it frees".into());
                continue;
            };
            let request = self.store().request_preempt(*task, &cap(reason), now)?;
            if let Some((run, pid)) = request {
                tracing::info!("task {task}: {reason} (for task {})", user.id);
                let mut s = lock(&self.pipeline.chain_status);
                s.preempted_at.insert(*task, now);
                s.yields_to.insert(*task, user.id);
                s.refused_preemptions.remove(task);
                drop(s);
                self.preempt_supervisor(*task, run, pid);
            }
        }
        Ok(again)
    }
}
