//! Combining answers whose verdicts come in any order (a 0.1 plugin's ids
//! as it lists them, a 0.2 answer's scores then deferrals then rejections,
//! a task judged twice): every task's judgement, found by the walk beside
//! each answer, is the one a map keyed by task id gives, read by place or
//! by id, and an urgent task's bypass, checked by its place, is its own.
//! Some answers carry a score column (an incremental policy's: 0 at each
//! place a verdict names), which counts as an allow for every task no
//! verdict names.

use std::collections::HashMap;
use std::sync::Arc;

use super::combine::{ChainAnswer, Deferred, Judgement, bound_until, combine};
use crate::plugins::policy as p;
use crate::plugins::tests::{snapshot, task};

/// A small pseudo-random source (no dependency, the same every run).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = (self.0.wrapping_mul(6364136223846793005)).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n.max(1) as u64) as usize
    }
}

/// Up to 3 answers over a queue of up to 20 tasks (a third urgent), each
/// naming tasks mostly a little ahead of the last, sometimes anywhere;
/// about half with a score column besides.
fn answers(r: &mut Lcg, ids: &[i64], now: i64) -> Vec<(String, p::Evaluation)> {
    (0..r.below(4))
        .map(|k| {
            let mut verdicts = Vec::new();
            let mut cursor = 0;
            for _ in 0..r.below(25) {
                if ids.is_empty() {
                    break;
                }
                cursor = match r.below(4) {
                    0 => r.below(ids.len()),
                    _ => (cursor + r.below(3)) % ids.len(),
                };
                let verdict = match r.below(4) {
                    0 => p::Verdict::Defer(p::Deferral {
                        reason: format!("d{}", r.below(3)).into(),
                        until: (r.below(2) == 0).then(|| now + r.below(100_000) as i64),
                    }),
                    1 => p::Verdict::Reject(format!("r{}", r.below(3)).into()),
                    _ => p::Verdict::Allow(r.below(10) as i32 - 3),
                };
                let task = ids[cursor];
                verdicts.push(p::TaskVerdict { task, verdict });
            }
            let mut scores = Vec::new();
            if r.below(2) == 0 {
                scores = (0..ids.len())
                    .map(|_| r.below(10) as i32 - 3)
                    .collect::<Vec<i32>>();
                for v in &verdicts {
                    if let Some(at) = ids.iter().position(|&id| id == v.task) {
                        scores[at] = 0;
                    }
                }
            }
            let e = p::Evaluation {
                verdicts,
                scores,
                closed_gpus: vec![],
                preempt: vec![],
            };
            (format!("p{k}"), e)
        })
        .collect()
}

/// The judgements by task id, and the wake-up, as a map keyed by id gives
/// them.
fn by_id(
    answers: &[(String, p::Evaluation)],
    s: &p::Snapshot,
    bypass: &[String],
) -> (HashMap<i64, Judgement>, Option<i64>) {
    let urgent = |id| (s.queue.iter()).any(|t| t.id == id && t.priority == p::Priority::Urgent);
    let (mut all, mut wake) = (HashMap::new(), None);
    for (name, e) in answers {
        // The score column: an allow for each task no verdict names.
        let scored = (s.queue.iter().zip(&e.scores))
            .filter(|(t, _)| !e.verdicts.iter().any(|v| v.task == t.id))
            .map(|(t, &score)| p::TaskVerdict {
                task: t.id,
                verdict: p::Verdict::Allow(score),
            });
        for v in &scored.chain(e.verdicts.iter().cloned()).collect::<Vec<_>>() {
            let j = all.entry(v.task).or_insert(Judgement::Eligible(0));
            match &v.verdict {
                p::Verdict::Allow(score) => {
                    if let Judgement::Eligible(s) = j {
                        *s += i64::from(*score);
                    }
                }
                p::Verdict::Defer(_) if bypass.contains(name) && urgent(v.task) => {}
                p::Verdict::Defer(d) => {
                    if let Some(until) = d.until {
                        let until = bound_until(until, s.now, 1000);
                        wake = Some(wake.map_or(until, |w: i64| w.min(until)));
                    }
                    if let Judgement::Eligible(_) = j {
                        let (by, reason) = (name.as_str().into(), Arc::clone(&d.reason));
                        *j = Judgement::Deferred(Deferred { by, reason });
                    }
                }
                p::Verdict::Reject(r) => {
                    *j = Judgement::Rejected(format!("rejected by {name}: {r}"));
                }
            }
        }
    }
    (all, wake)
}

#[test]
fn verdicts_in_any_order_or_repeated_judge_each_task_as_a_map_by_id_does() {
    let mut r = Lcg(3);
    for round in 0..3000 {
        let mut ids: Vec<i64> = Vec::new();
        for _ in 0..r.below(20) {
            let id = r.below(50) as i64;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let queue = (ids.iter())
            .map(|&id| {
                let urgent = r.below(3) == 0;
                let priority = [p::Priority::Normal, p::Priority::Urgent][usize::from(urgent)];
                task(id, "p", priority, 0)
            })
            .collect();
        let s = snapshot(queue);
        let given = answers(&mut r, &ids, s.now);
        let bypass = [vec!["p0".to_string()], vec!["p1".into(), "p2".into()]][r.below(2)].clone();
        let (want, wake) = by_id(&given, &s, &bypass);
        let mut answer = ChainAnswer::default();
        combine(&mut answer, given, &s, &bypass, 1000, round % 2 == 0);
        let j = &answer.judgements;
        assert_eq!(j.len(), ids.len());
        for (at, &id) in ids.iter().enumerate() {
            let want = want.get(&id).cloned().unwrap_or(Judgement::Eligible(0));
            assert_eq!(
                j.of(at, id),
                Some(&want),
                "round {round}: task {id} by place"
            );
            assert_eq!(j.get(id), Some(&want), "round {round}: task {id} by id");
            let wrong = (at + 1) % ids.len();
            assert_eq!(
                j.of(wrong, id),
                Some(&want),
                "round {round}: {id} misplaced"
            );
        }
        assert_eq!(answer.wake_at, wake, "round {round}");
    }
}
