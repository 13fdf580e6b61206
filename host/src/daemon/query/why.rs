//! `nightjar why ID`: why a task waits, or where and why it started, from
//! the store, the policies' live verdicts and the placement code's own
//! account of what stands in the way.

use crate::store::{TaskDetail, TaskState};
use nightjar_core::api::why::{PolicyVerdict, RunWhy, WaitingDep, WhyReport};

use crate::daemon::state::{Daemon, lock};

impl Daemon {
    /// Puts a waiting task's live reason (the policies' current text, which
    /// the store has only as of its last change of cause) into `t`.
    pub fn live_reason(&self, t: &mut crate::store::TaskRow) {
        if t.state != TaskState::Queued {
            return;
        }
        if let Some(gate) = lock(&self.pipeline.start_gate).as_ref() {
            t.reason = Some(gate.clone());
        } else if let Some(r) = lock(&self.pipeline.wait_reasons).get(&t.id) {
            t.reason = Some(r.clone());
        } else if let Some(r) = lock(&self.pipeline.quota_reasons).get(&t.id) {
            t.reason = Some(r.clone());
        } else if let Some(r) = lock(&self.pipeline.place_reasons).get(&t.id) {
            t.reason = Some(r.clone());
        } else if let Some(at) = t.not_before {
            let left = at.saturating_sub(self.now_ms());
            if left > 0 {
                let r = t.reason.take().unwrap_or_else(|| "waiting".into());
                t.reason = Some(format!(
                    "{r}; next attempt in {}",
                    crate::time::fmt_span(left)
                ));
            }
        }
    }

    /// Why task `id` is where it is: a typed report (`WhyReport::lines`
    /// renders it), its placement part from the same code that places tasks.
    pub fn why(&self, id: i64) -> anyhow::Result<WhyReport> {
        let mut d: TaskDetail = self.store().show(id)?;
        self.live_reason(&mut d.task);
        let t = &d.task;
        let waiting_for: Vec<WaitingDep> = if t.state == TaskState::Queued {
            d.deps
                .iter()
                .filter(|dep| match dep.kind {
                    crate::task::model::DepKind::AfterOk => dep.state != TaskState::Succeeded,
                    crate::task::model::DepKind::AfterAny => !dep.state.is_final(),
                })
                .map(|dep| WaitingDep {
                    id: dep.dep_id,
                    name: dep.name.clone(),
                    state: dep.state.as_str().to_string(),
                })
                .collect()
        } else {
            Vec::new()
        };
        // After a gpu-oom the retry also waits for a GPU with room: shown
        // GPU by GPU even though the task carries its retry reason.
        let peak = self.store().needs_gpu_free(id)?;
        let placing = lock(&self.pipeline.place_reasons).contains_key(&id);
        let fit = (t.state == TaskState::Queued
            && waiting_for.is_empty()
            && (t.reason.is_none() || peak.is_some() || placing))
            .then(|| {
                let mut pool = lock(&self.pool);
                pool.stagger.now = self.now_ms();
                pool.explain_after(&d.spec.resources, peak)
            });
        let placed = d.events.iter().rev().find(|e| e.kind == "placed");
        let run = d.runs.last().map(|run| RunWhy {
            id: run.id,
            started_at: run.started_at,
            gpus: run.gpus.clone(),
            because: placed
                .map(|e| e.message.clone())
                .unwrap_or_else(|| "built-in order (priority, then submit time)".into()),
            waited_ms: run.started_at - run.eligible_at,
            class: run.class.map(|c| c.as_str().to_string()),
            message: run.message.clone(),
            executor: run
                .class
                .is_none()
                .then(|| self.runs.describe(run.id))
                .flatten(),
        });
        // The stored row says since when; the live verdict has the current text.
        let live = std::sync::Arc::clone(&lock(&self.pipeline.chain_status).verdicts);
        let mut stored = self.store().verdicts(id)?;
        // In chain order, as the policies are asked.
        let chain = &self.cfg.plugins.chain;
        stored.sort_by_key(|v| chain.iter().position(|n| *n == v.0).unwrap_or(usize::MAX));
        let verdicts = stored
            .into_iter()
            .map(|(plugin, verdict, reason, since)| {
                let (verdict, reason) = live
                    .get(&(id, plugin.clone()))
                    .cloned()
                    .unwrap_or((verdict, reason));
                PolicyVerdict {
                    plugin,
                    verdict,
                    reason,
                    since,
                }
            })
            .collect();
        let refused_preemption = (t.state == TaskState::Running)
            .then(|| {
                lock(&self.pipeline.chain_status)
                    .refused_preemptions
                    .get(&id)
                    .cloned()
            })
            .flatten();
        Ok(WhyReport {
            id: t.id,
            name: t.name.clone(),
            state: t.state.as_str().to_string(),
            submitted_at: t.submitted_at,
            reason: t.reason.clone(),
            waiting_for,
            fit,
            slots: self.cfg.slots,
            next_firing: (t.state == TaskState::Scheduled)
                .then_some(t.next_fire_at)
                .flatten(),
            run,
            verdicts,
            refused_preemption,
            members: t.counts.as_ref().map(|c| (c.total, c.summary())),
        })
    }
}
