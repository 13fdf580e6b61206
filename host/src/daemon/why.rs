//! `nightjar why ID`: one screen on why a task waits, or where and why it
//! started, from the store and the daemon's current view of its resources.

use crate::store::{TaskDetail, TaskState};
use crate::time::{fmt_local, fmt_span, now_ms};

use super::core::{Daemon, lock};

impl Daemon {
    /// Puts a waiting task's live reason (the policies' current text, which
    /// the store has only as of its last change of cause) into `t`.
    pub fn live_reason(&self, t: &mut crate::store::TaskRow) {
        if t.state == TaskState::Queued
            && let Some(r) = lock(&self.wait_reasons).get(&t.id)
        {
            t.reason = Some(r.clone());
        }
    }

    /// Lines explaining task `id`'s state.
    pub fn why(&self, id: i64) -> anyhow::Result<Vec<String>> {
        let mut d: TaskDetail = self.store().show(id)?;
        self.live_reason(&mut d.task);
        let t = &d.task;
        let now = now_ms();
        let mut out = vec![format!(
            "task {} ({}) is {}",
            t.id,
            t.name,
            t.state.as_str()
        )];
        let placed = d.events.iter().rev().find(|e| e.kind == "placed");
        match t.state {
            TaskState::Queued => {
                let waiting_on: Vec<String> = d
                    .deps
                    .iter()
                    .filter(|dep| match dep.kind {
                        crate::task::model::DepKind::AfterOk => dep.state != TaskState::Succeeded,
                        crate::task::model::DepKind::AfterAny => !dep.state.is_final(),
                    })
                    .map(|dep| format!("{} ({}, {})", dep.dep_id, dep.name, dep.state.as_str()))
                    .collect();
                if !waiting_on.is_empty() {
                    out.push(format!(
                        "waiting for dependencies: {}",
                        waiting_on.join(", ")
                    ));
                } else if let Some(r) = &t.reason {
                    out.push(format!("waiting: {r}"));
                } else {
                    let pool = lock(&self.pool);
                    let need = &d.spec.resources;
                    let open_gpus = pool
                        .gpus
                        .iter()
                        .filter(|g| {
                            g.open && !g.exclusive && !pool.policy_closed.contains_key(&g.index)
                        })
                        .count();
                    if pool.slots == 0 {
                        out.push(format!(
                            "waiting for a free slot: all {} are in use",
                            self.cfg.slots
                        ));
                    } else if need.gpus as usize > open_gpus {
                        out.push(format!(
                            "waiting for GPUs: needs {}, {} open and free now",
                            need.gpus, open_gpus
                        ));
                        for reason in pool.policy_closed.values() {
                            out.push(format!("  {reason}"));
                        }
                    } else {
                        out.push("eligible: it starts at the next scheduling pass".into());
                    }
                }
                out.push(format!(
                    "submitted {} ({} ago)",
                    fmt_local(t.submitted_at),
                    fmt_span(now - t.submitted_at)
                ));
            }
            TaskState::Held => out.push("held by a user: `nightjar release` lets it start".into()),
            TaskState::Blocked | TaskState::Failed | TaskState::Cancelled => {
                if let Some(r) = &t.reason {
                    out.push(r.clone());
                }
            }
            TaskState::Scheduled => {
                if let Some(at) = t.next_fire_at {
                    out.push(format!(
                        "recurring: next firing {} (in {})",
                        fmt_local(at),
                        fmt_span(at - now)
                    ));
                }
            }
            TaskState::Running | TaskState::Succeeded | TaskState::Array => {}
        }
        if let Some(run) = d.runs.last() {
            let gpus = run
                .gpus
                .as_deref()
                .map(|g| format!(" on GPU {g}"))
                .unwrap_or_default();
            let because = placed
                .map(|e| format!(": {}", e.message))
                .unwrap_or_else(|| ": built-in order (priority, then submit time)".into());
            out.push(format!(
                "run {} started {}{gpus}{because}",
                run.id,
                fmt_local(run.started_at)
            ));
            out.push(format!(
                "  waited {} after becoming eligible",
                fmt_span(run.started_at - run.eligible_at)
            ));
            if let Some(c) = run.class {
                out.push(format!("  ended {}", c.as_str()));
            }
        }
        // The stored row says since when; the live verdict has the current text.
        let live = std::sync::Arc::clone(&lock(&self.chain_status).verdicts);
        // In chain order, as the policies are asked.
        let mut verdicts = self.store().verdicts(id)?;
        let chain = &self.cfg.plugins.chain;
        verdicts.sort_by_key(|v| chain.iter().position(|n| *n == v.0).unwrap_or(usize::MAX));
        for (plugin, verdict, reason, since) in verdicts {
            let (verdict, reason) = live
                .get(&(id, plugin.clone()))
                .cloned()
                .unwrap_or((verdict, reason));
            out.push(format!(
                "  {plugin}: {verdict} ({reason}) since {}",
                fmt_local(since)
            ));
        }
        if t.state == TaskState::Running
            && let Some((reason, at)) = lock(&self.chain_status).refused_preemptions.get(&id)
        {
            out.push(format!("  {reason} ({})", fmt_local(*at)));
        }
        if let Some(c) = &t.counts {
            out.push(format!(
                "members: {} ({})",
                c.total,
                crate::cli::ls_counts(c)
            ));
        }
        Ok(out)
    }
}
