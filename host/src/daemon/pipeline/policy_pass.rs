//! A scheduling pass through the policy chain, on the scheduler thread:
//! snapshot -> evaluate (the chain's workers) -> combine -> record what
//! changed -> start what is eligible and fits -> honour the preemptions that
//! are worth their cost. What the API shows of the chain (members, closed
//! GPUs, live verdicts, refused preemptions) is published after each pass,
//! so no request ever waits on a plugin.

use std::collections::HashMap;
use std::sync::Arc;

use crate::daemon::MemberView;
use crate::daemon::pipeline::chain::Chain;
use crate::daemon::pipeline::combine::{self, Judgement, Ranked, cause};
use crate::daemon::pipeline::dispatch::Ranking;
use crate::daemon::state::{Daemon, lock};
use crate::plugins::policy as p;
use crate::store::Candidate;

/// Longest plugin-caused message written to the events table.
const MAX_EVENT_TEXT: usize = 1024;

/// Bytes of `waiting` events (a deferral whose cause changed) the policies
/// may add to the events table in a minute, all tasks together. A policy
/// that changes every task's reason every pass would otherwise add its
/// reasons to the database every pass, for ever.
pub const WAIT_EVENT_BUDGET: usize = 128 << 10;

/// The per-minute budget of `waiting` events; the excess is counted and
/// summarised in one event when the minute ends.
#[derive(Debug, Default)]
pub struct WaitEventBudget {
    /// When the current minute began (Unix ms).
    window_start: i64,
    /// Bytes written in it.
    used: usize,
    /// Events dropped in it, and their bytes.
    dropped: u64,
    dropped_bytes: u64,
}

impl WaitEventBudget {
    /// Whether an event of `bytes` may be written in this minute.
    pub fn admit(&mut self, bytes: usize) -> bool {
        if self.used.saturating_add(bytes) > WAIT_EVENT_BUDGET {
            self.dropped += 1;
            self.dropped_bytes += bytes as u64;
            return false;
        }
        self.used += bytes;
        true
    }

    /// Ends the minute if it is over: the summary of what was dropped in it.
    pub fn roll(&mut self, now: i64) -> Option<String> {
        if now.saturating_sub(self.window_start) < 60_000 {
            return None;
        }
        let summary = (self.dropped > 0).then(|| {
            format!(
                "{} waiting events ({} bytes) not recorded: policies changed their reasons faster than the budget of {} bytes a minute; `nightjar why` shows each task's current reason",
                self.dropped, self.dropped_bytes, WAIT_EVENT_BUDGET
            )
        });
        *self = WaitEventBudget {
            window_start: now,
            ..WaitEventBudget::default()
        };
        summary
    }
}

/// What the API may read of the chain, published by the scheduler thread.
#[derive(Debug, Default)]
pub struct ChainStatus {
    /// Its members.
    pub views: Vec<MemberView>,
    /// Per GPU, the policies that closed it in the last pass.
    pub closed_by: HashMap<u32, Vec<String>>,
    /// Every policy's current verdict: (task, plugin) -> (verdict, reason).
    pub verdicts: Arc<HashMap<(i64, String), (String, String)>>,
    /// Preemption requests the host refused, by victim: (reason, when).
    pub refused_preemptions: HashMap<i64, (String, i64)>,
    /// When each task was last preempted.
    pub preempted_at: HashMap<i64, i64>,
    /// A preempted task yields to the task it was preempted for until that
    /// one has started or may no longer start: victim -> beneficiary.
    pub yields_to: HashMap<i64, i64>,
    /// The per-minute budget of `waiting` events.
    pub wait_events: WaitEventBudget,
}

/// `text` cut to `MAX_EVENT_TEXT` bytes (at a character boundary), saying how long it was.
pub(in crate::daemon) fn cap(text: &str) -> String {
    if text.len() <= MAX_EVENT_TEXT {
        return text.to_string();
    }
    let mut end = MAX_EVENT_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes in all)", &text[..end], text.len())
}

impl Daemon {
    /// A scheduling pass through the chain: snapshot -> evaluate -> combine
    /// -> record -> start in ranked order -> preempt. The ranking is kept for
    /// the passes until the next evaluation. True when something started.
    pub(in crate::daemon) fn policy_pass(
        self: &Arc<Self>,
        chain: &mut Chain,
        ranking: &mut Option<Ranking>,
        now: i64,
    ) -> anyhow::Result<bool> {
        // What asking the chain costs sets how long its ranking is reused.
        let t0 = std::time::Instant::now();
        let running = self.store().running_tasks()?;
        // With every slot taken, a pass can still preempt; without a
        // preemptible run there is nothing to decide.
        if lock(&self.pool).slots == 0 && !running.iter().any(|r| r.preemptible) {
            return Ok(self.nothing_to_decide());
        }
        let queue = self
            .store()
            .candidates(now, self.cfg.plugins.max_queue, 0)?;
        if queue.is_empty() {
            return Ok(self.nothing_to_decide());
        }
        let window = self.cfg.plugins.usage_window.as_millis() as i64;
        let usage = self.store().usage_since(now.saturating_sub(window))?;
        let closed_by = lock(&self.pipeline.chain_status).closed_by.clone();
        let gpus = self
            .gpu_views()
            .into_iter()
            .map(|g| p::Gpu {
                index: g.index,
                uuid: g.uuid,
                name: g.name,
                mem_total: g.mem_total.unwrap_or(0),
                mem_used: g.mem_used.unwrap_or(0),
                mem_reserved: g.mem_reserved,
                util: g.util.unwrap_or(0),
                temperature: g.temp_c.unwrap_or(0),
                power: g.power_w.map(|w| (w * 1000.0) as u32).unwrap_or(0),
                healthy: g.healthy,
                closed_by: closed_by.get(&g.index).cloned().unwrap_or_default(),
            })
            .collect();
        use crate::daemon::pipeline::snapshot;
        let snap = Arc::new(snapshot::snapshot(
            &self.cfg,
            now,
            queue.iter().map(snapshot::queued).collect(),
            running.iter().map(snapshot::running).collect(),
            gpus,
            snapshot::usage(&usage),
        ));
        let mut answer = chain.evaluate(snap, now);
        for (name, took) in &answer.calls {
            self.metrics.plugin_call_took(name, *took);
        }
        self.record_verdicts(&answer.verdicts, now)?;
        {
            let mut status = lock(&self.pipeline.chain_status);
            status.views = chain.views();
            status.closed_by = std::mem::take(&mut answer.closed_by);
            // Handed over, not copied: up to a verdict per task and policy.
            status.verdicts = Arc::new(std::mem::take(&mut answer.verdicts));
        }
        for (name, msg) in &answer.failures {
            tracing::warn!("{}", cap(msg));
            if let Err(e) = self.store().plugin_event("plugin-failed", &cap(msg), now) {
                tracing::error!("policy {name}: cannot record its failure: {e}");
            }
            if msg.contains("; disabled after") {
                let facts = serde_json::json!({ "message": cap(msg), "plugin": name });
                let r = self.store().daemon_event(
                    now,
                    "plugin-disabled",
                    crate::store::outbox::Severity::Error,
                    facts,
                );
                if let Err(e) = r {
                    tracing::error!("policy {name}: cannot tell of its disabling: {e}");
                }
                self.changed();
            }
        }
        let dropped = lock(&self.pipeline.chain_status).wait_events.roll(now);
        if let Some(summary) = dropped {
            tracing::warn!("{summary}");
            self.store()
                .plugin_event("waiting-events-dropped", &summary, now)?;
        }
        self.set_policy_wake(&answer, now);
        lock(&self.pool).policy_closed = answer.closed_gpus.clone().into_iter().collect();
        let mut order = Vec::with_capacity(queue.len());
        for (at, c) in queue.iter().enumerate() {
            match answer
                .judgements
                .of(at, c.id)
                .cloned()
                .unwrap_or(Judgement::Eligible(0))
            {
                Judgement::Eligible(score) => {
                    if lock(&self.pipeline.wait_reasons).remove(&c.id).is_some() {
                        self.store().set_wait_reason(c.id, None, true, now)?;
                    }
                    order.push((score, c));
                }
                Judgement::Deferred(why) => {
                    let reason = why.to_string();
                    let before = lock(&self.pipeline.wait_reasons).get(&c.id).cloned();
                    if before.as_ref() != Some(&reason) {
                        // The store learns a reason when its cause changes (with an
                        // event, within the budget); a countdown in its text changes
                        // only the live reason that `ls`, `show` and `why` read.
                        if before.is_none_or(|b| cause(&b) != cause(&reason)) {
                            let event = lock(&self.pipeline.chain_status)
                                .wait_events
                                .admit(reason.len());
                            self.store()
                                .set_wait_reason(c.id, Some(&reason), event, now)?;
                        }
                        lock(&self.pipeline.wait_reasons).insert(c.id, reason);
                    }
                }
                Judgement::Rejected(reason) => {
                    lock(&self.pipeline.wait_reasons).remove(&c.id);
                    self.store().reject_task(c.id, &cap(&reason), now)?;
                    self.changed();
                }
            }
        }
        // Live reasons of tasks that left the queue (started elsewhere,
        // cancelled, held) are dropped with them.
        let queued: std::collections::HashSet<i64> = queue.iter().map(|c| c.id).collect();
        lock(&self.pipeline.wait_reasons).retain(|id, _| queued.contains(id));
        lock(&self.pipeline.place_reasons).retain(|id, _| queued.contains(id));
        if let Some(why) = answer.hold_all {
            tracing::warn!("starting nothing: {why}");
            *ranking = Some(Ranking {
                at: now,
                ..Ranking::default()
            });
            return Ok(false);
        }
        // Equal scores (a failing or disabled scorer leaves all at 0) fall
        // back to the built-in order: priority class, then age.
        let rank = |(score, c): &(i64, &Candidate)| Ranked {
            id: c.id,
            score: *score,
            priority: c.spec.priority.rank(),
            submitted_at: c.submitted_at,
        };
        order.sort_by(|a, b| combine::start_order(&rank(a), &rank(b)));
        // A preempted task yields only while the task it was preempted for
        // may start: one deferred since (a tariff window, a hot GPU) would
        // otherwise keep the freed slot empty for hours.
        let eligible: std::collections::HashSet<i64> = order.iter().map(|(_, c)| c.id).collect();
        lock(&self.pipeline.chain_status)
            .yields_to
            .retain(|_, b| eligible.contains(b));
        let ranked = Ranking {
            at: now,
            window_ms: crate::daemon::pipeline::dispatch::window_after(t0.elapsed()).as_millis()
                as i64,
            order: order.iter().map(|(score, c)| (c.id, *score)).collect(),
            parts: std::mem::take(&mut answer.parts),
        };
        let mut easy = self.easy(now);
        let dispatched = self.dispatch(
            order.iter().map(|(score, c)| (*c, *score)),
            |id, score| Some(ranked.because(id, score)),
            &mut easy,
        )?;
        let by_id: HashMap<i64, &Candidate> = queue.iter().map(|c| (c.id, c)).collect();
        let waiting: Vec<&Candidate> = dispatched
            .waiting
            .iter()
            .filter_map(|id| by_id.get(id).copied())
            .collect();
        if let Some(again) = self.preempt(&answer.preempt, &running, &waiting, now)? {
            // A request refused for now is looked at again when it may be honoured.
            let mut wake = lock(&self.pipeline.policy_wake);
            *wake = Some(wake.map_or(again, |w| w.min(again)));
        }
        *ranking = Some(ranked);
        Ok(dispatched.started)
    }

    /// A pass with no slot to fill and nothing to preempt, or no queue:
    /// the chain is not asked, and not asked again until something changes
    /// (a run's end, a submit). A wake-up left from an earlier ranking would
    /// otherwise be in the past at every turn, and the scheduler thread
    /// would spin (it did: 1,200 passes a second with every slot taken).
    fn nothing_to_decide(&self) -> bool {
        *lock(&self.pipeline.policy_wake) = None;
        false
    }

    /// Stores each verdict whose kind or cause changed (a countdown in a
    /// reason is not a change); the live text is kept for `why`.
    fn record_verdicts(
        &self,
        verdicts: &HashMap<(i64, String), (String, String)>,
        now: i64,
    ) -> anyhow::Result<()> {
        let before = Arc::clone(&lock(&self.pipeline.chain_status).verdicts);
        let changed: Vec<(i64, String, String, String)> = verdicts
            .iter()
            .filter(|(k, (kind, reason))| {
                before
                    .get(*k)
                    // The same text is the same cause: `cause` copies both,
                    // for each task and policy at every pass.
                    .is_none_or(|(bk, br)| {
                        bk != kind || (br != reason && cause(br) != cause(reason))
                    })
            })
            .map(|((t, p), (k, r))| (*t, p.clone(), k.clone(), r.clone()))
            .collect();
        self.store().record_verdicts(&changed, now)?;
        Ok(())
    }

    /// When the chain is asked again: the earliest bounded `until`; within a
    /// minute for a deferral without one; with the next GPU reading while a
    /// policy closes a GPU. Never sooner than `plugins.min_pass_interval`.
    fn set_policy_wake(&self, answer: &crate::daemon::pipeline::combine::ChainAnswer, now: i64) {
        let min = now + self.cfg.plugins.min_pass_interval.as_millis() as i64;
        let any_open_deferral = answer
            .judgements
            .iter()
            .any(|(_, j)| matches!(j, Judgement::Deferred(_)));
        let mut wake = match (answer.wake_at, any_open_deferral) {
            (Some(t), _) => Some(t),
            (None, true) => Some(now + 60_000),
            (None, false) => None,
        };
        if !answer.closed_gpus.is_empty() {
            let again = now + self.cfg.gpu.sample_period.as_millis() as i64;
            wake = Some(wake.map_or(again, |w| w.min(again)));
        }
        *lock(&self.pipeline.policy_wake) = wake.map(|w| w.max(min));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_events_past_the_minute_budget_are_dropped_and_summarised_once() {
        let mut b = WaitEventBudget::default();
        assert_eq!(b.roll(60_000), None, "a new minute with nothing dropped");
        let mut admitted = 0;
        for _ in 0..100 {
            admitted += usize::from(b.admit(4096));
        }
        assert_eq!(admitted, WAIT_EVENT_BUDGET / 4096);
        assert_eq!(b.roll(119_999), None, "the minute is not over");
        let summary = b.roll(120_000).expect("summary");
        assert!(
            summary.starts_with(&format!(
                "{} waiting events ({} bytes) not recorded",
                100 - admitted,
                (100 - admitted) * 4096
            )),
            "{summary}"
        );
        assert!(b.admit(4096), "a fresh minute");
        assert_eq!(b.roll(180_000), None, "nothing dropped: no summary");
    }
}
