//! Combining the policies' answers (pure): a task may start when no policy
//! defers or rejects it; eligible tasks start in order of their summed scores,
//! then by age. A reject fails the task with the policy's reason. Urgent
//! tasks bypass the deferrals of the policies in `plugins.urgent_bypass`.
//! Deferral times are the host's to bound: a past or absurd `until` cannot
//! make the daemon spin or sleep through its own wake-ups.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::judgements::{Judgements, Walk};
use crate::plugins::policy as p;

/// Latest `until` a plugin may ask for, from now: a year.
pub const MAX_DEFER_MS: i64 = 365 * 86_400_000;

/// How the chain judged one task.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    /// May start, with this summed score.
    Eligible(i64),
    /// Waits: why.
    Deferred(Deferred),
    /// Fails: why.
    Rejected(String),
}

/// Why a task waits: the policy that deferred it and its reason, both
/// shared (one reason often answers a whole queue), written out as
/// "deferred by NAME: REASON" only where it is read: the daemon's wait
/// reasons, not the simulator's or a forecast's passes.
#[derive(Debug, Clone, PartialEq)]
pub struct Deferred {
    /// The policy.
    pub by: Arc<str>,
    /// Its reason.
    pub reason: Arc<str>,
}

impl fmt::Display for Deferred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "deferred by {}: {}", self.by, self.reason)
    }
}

/// The chain's answer for one pass.
#[derive(Debug, Default)]
pub struct ChainAnswer {
    /// Per task of the snapshot's queue, by its place there (tasks no
    /// policy judged are eligible with score 0).
    pub judgements: Judgements,
    /// GPUs closed to new work this pass, with the reason.
    pub closed_gpus: HashMap<u32, String>,
    /// Per GPU, the policies that closed it.
    pub closed_by: HashMap<u32, Vec<String>>,
    /// A failing `closed` plugin: start nothing this pass.
    pub hold_all: Option<String>,
    /// Failures to record: (plugin, message).
    pub failures: Vec<(String, String)>,
    /// The earliest `until` of a deferral, bounded by the host.
    pub wake_at: Option<i64>,
    /// Each eligible task's score, policy by policy, in chain order (kept
    /// only when the chain explains: `Chain::explain`).
    pub parts: HashMap<i64, Vec<(Arc<str>, i32)>>,
    /// Preemption requests: (task, reason).
    pub preempt: Vec<(i64, String)>,
    /// Each policy's verdict per task this pass: (task, plugin) -> (verdict,
    /// reason) (kept only when the chain explains).
    pub verdicts: HashMap<(i64, String), (String, String)>,
    /// How long each member's call took (wall time), in chain order: the
    /// members called this pass.
    pub calls: Vec<(String, std::time::Duration)>,
}

/// A deferral's `until` as the host honours it: a time in the past (or now)
/// means "ask again after the minimum interval"; more than a year ahead is
/// clamped to a year. Saturating throughout: no value wraps.
pub fn bound_until(until: i64, now: i64, min_interval_ms: i64) -> i64 {
    let earliest = now.saturating_add(min_interval_ms.max(1));
    let latest = now.saturating_add(MAX_DEFER_MS);
    until.clamp(earliest, latest.max(earliest))
}

/// What a reason says, without the numbers in it: a countdown such as
/// "(in 13h02m)" changes every minute, its cause does not.
pub fn cause(reason: &str) -> String {
    reason.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// One eligible task as the order sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranked {
    /// Task id.
    pub id: i64,
    /// The policies' summed score.
    pub score: i64,
    /// The task's priority class (higher first).
    pub priority: i64,
    /// When it was submitted.
    pub submitted_at: i64,
}

/// The start order: summed score, then the built-in order (priority class,
/// then age, then id). With every score equal (no policy scores, or the
/// scoring policy fails or is disabled) this is exactly the built-in order.
pub fn start_order(a: &Ranked, b: &Ranked) -> std::cmp::Ordering {
    b.score
        .cmp(&a.score)
        .then(b.priority.cmp(&a.priority))
        .then(a.submitted_at.cmp(&b.submitted_at))
        .then(a.id.cmp(&b.id))
}

/// Combines the answers of the members that answered, in chain order.
pub fn combine(
    answer: &mut ChainAnswer,
    answers: Vec<(String, p::Evaluation)>,
    snapshot: &p::Snapshot,
    urgent_bypass: &[String],
    min_interval_ms: i64,
    explain: bool,
) {
    let queue = &snapshot.queue;
    answer.judgements = Judgements::new(queue.iter().map(|t| t.id).collect());
    for (name, e) in answers {
        let by: Arc<str> = name.as_str().into();
        let bypassed = urgent_bypass.contains(&name);
        // A score column is added as one (its named places hold 0); to
        // explain it, it is read as the verdicts it stands for.
        let verdicts = if e.scores.is_empty() {
            e.verdicts
        } else if explain {
            e.all_verdicts(queue)
        } else {
            answer.judgements.add_scores(&e.scores);
            e.verdicts
        };
        // Verdicts come in queue order: each found by walking the queue.
        let mut walk = Walk::new();
        for v in verdicts {
            if explain {
                let (kind, reason) = match &v.verdict {
                    p::Verdict::Allow(s) => ("allow", format!("score {s}")),
                    p::Verdict::Defer(d) => ("defer", d.reason.to_string()),
                    p::Verdict::Reject(r) => ("reject", r.to_string()),
                };
                answer
                    .verdicts
                    .insert((v.task, name.clone()), (kind.to_string(), reason));
            }
            // Every verdict names a queued task (each answer is checked so).
            let Some((at, j)) = answer.judgements.slot(&mut walk, v.task) else {
                continue;
            };
            match v.verdict {
                p::Verdict::Allow(score) => {
                    if let Judgement::Eligible(s) = j {
                        *s = s.saturating_add(score as i64);
                        if explain {
                            answer
                                .parts
                                .entry(v.task)
                                .or_default()
                                .push((Arc::clone(&by), score));
                        }
                    }
                }
                p::Verdict::Defer(_)
                    if bypassed
                        && queue.get(at).map(|t| t.priority) == Some(p::Priority::Urgent) => {}
                p::Verdict::Defer(d) => {
                    if let Some(until) = d.until {
                        let until = bound_until(until, snapshot.now, min_interval_ms);
                        answer.wake_at = Some(answer.wake_at.map_or(until, |w| w.min(until)));
                    }
                    if let Judgement::Eligible(_) = j {
                        *j = Judgement::Deferred(Deferred {
                            by: Arc::clone(&by),
                            reason: d.reason,
                        });
                    }
                }
                p::Verdict::Reject(r) => {
                    *j = Judgement::Rejected(format!("rejected by {name}: {r}"))
                }
            }
        }
        for g in e.closed_gpus {
            answer
                .closed_by
                .entry(g.index)
                .or_default()
                .push(name.clone());
            answer
                .closed_gpus
                .entry(g.index)
                .or_insert(format!("closed by {name}: {}", g.reason));
        }
        for pre in e.preempt {
            answer
                .preempt
                .push((pre.task, format!("preempted by {name}: {}", pre.reason)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::tests::{snapshot, task};

    #[test]
    fn ties_fall_back_to_the_built_in_order_priority_then_age() {
        let r = |id, score, priority, submitted_at| Ranked {
            id,
            score,
            priority,
            submitted_at,
        };
        let mut tasks = [
            r(1, 0, 1, 100),
            r(2, 0, 3, 300),
            r(3, 0, 3, 200),
            r(4, 5, 0, 900),
            r(5, 0, 1, 100),
        ];
        tasks.sort_by(start_order);
        let ids: Vec<i64> = tasks.iter().map(|t| t.id).collect();
        assert_eq!(
            ids,
            vec![4, 3, 2, 1, 5],
            "score first; then priority class, then age, then id"
        );
    }

    #[test]
    fn untils_in_the_past_or_absurd_are_bounded_without_wrapping() {
        let now = 1_000_000;
        assert_eq!(bound_until(now, now, 1000), now + 1000);
        assert_eq!(bound_until(-1, now, 1000), now + 1000);
        assert_eq!(bound_until(i64::MIN, now, 1000), now + 1000);
        assert_eq!(bound_until(i64::MAX, now, 1000), now + MAX_DEFER_MS);
        assert_eq!(bound_until(now + 5000, now, 1000), now + 5000);
        assert_eq!(
            bound_until(i64::MAX, i64::MAX - 5, 1000),
            i64::MAX,
            "saturates at the end of time"
        );
    }

    #[test]
    fn a_countdown_is_not_a_new_cause() {
        assert_eq!(
            cause("price 1.20 CNY/kWh until 23:00 (in 13h02m)"),
            cause("price 1.20 CNY/kWh until 23:00 (in 13h01m)")
        );
        assert_ne!(cause("GPU too hot"), cause("off-peak window closed"));
    }

    fn queued(id: i64, priority: p::Priority) -> p::QueuedTask {
        task(id, "p", priority, 0)
    }

    fn verdict(task: i64, verdict: p::Verdict) -> p::TaskVerdict {
        p::TaskVerdict { task, verdict }
    }

    #[test]
    fn scores_add_up_defers_win_and_urgent_bypasses_only_the_listed_policy() {
        let snap = snapshot(vec![
            queued(1, p::Priority::Normal),
            queued(2, p::Priority::Urgent),
            queued(3, p::Priority::Normal),
        ]);
        let defer = |reason: &str, until| {
            p::Verdict::Defer(p::Deferral {
                reason: reason.into(),
                until,
            })
        };
        let a = p::Evaluation {
            verdicts: vec![
                verdict(1, p::Verdict::Allow(5)),
                verdict(2, defer("night only", Some(-5))),
                verdict(3, p::Verdict::Reject("never".into())),
            ],
            scores: vec![],
            closed_gpus: vec![],
            preempt: vec![],
        };
        let b = p::Evaluation {
            verdicts: vec![verdict(1, p::Verdict::Allow(7))],
            scores: vec![],
            closed_gpus: vec![],
            preempt: vec![],
        };
        let mut answer = ChainAnswer::default();
        combine(
            &mut answer,
            vec![("offpeak".into(), a), ("prio".into(), b)],
            &snap,
            &["offpeak".to_string()],
            1000,
            true,
        );
        assert_eq!(answer.judgements.get(1), Some(&Judgement::Eligible(12)));
        assert_eq!(
            answer.parts[&1],
            vec![("offpeak".into(), 5), ("prio".into(), 7)]
        );
        assert_eq!(answer.judgements.get(2), Some(&Judgement::Eligible(0)));
        assert_eq!(
            answer.judgements.get(3),
            Some(&Judgement::Rejected("rejected by offpeak: never".into()))
        );
        // The bypassed deferral still set no wake-up; a bounded one would be now + 1 s.
        assert_eq!(answer.wake_at, None);
        let mut answer = ChainAnswer::default();
        let c = p::Evaluation {
            verdicts: vec![verdict(1, defer("later", Some(i64::MIN)))],
            scores: vec![],
            closed_gpus: vec![],
            preempt: vec![],
        };
        combine(&mut answer, vec![("x".into(), c)], &snap, &[], 1000, true);
        assert_eq!(
            answer.wake_at,
            Some(snap.now + 1000),
            "now + the minimum interval"
        );
        match answer.judgements.get(1).expect("queued") {
            Judgement::Deferred(d) => assert_eq!(d.to_string(), "deferred by x: later"),
            other => panic!("{other:?}"),
        }
    }
}
