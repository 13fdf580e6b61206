//! A 0.2 answer read into the host's model and checked on the way: every
//! task and reason index must be in range, no task judged twice, every GPU
//! must exist, sizes within bounds. One bad item rejects the whole answer,
//! with what was wrong; nothing a plugin sends can make the host panic.

use super::types as w;
use crate::plugins::limits::MAX_REASON;
use crate::plugins::policy::{self as p, PluginError};

fn bad<T>(message: String) -> Result<T, PluginError> {
    Err(PluginError::Invalid(message))
}

/// Reads `e`, the answer of a 0.2 plugin to `sent` (`s` in 0.2's form),
/// into the host's model. Queued tasks' ids come from `sent`'s id column: one
/// contiguous list rather than a walk over the host's records.
pub fn read(
    s: &p::Snapshot,
    sent: &w::Snapshot,
    e: w::Evaluation,
) -> Result<p::Evaluation, PluginError> {
    let ids = &sent.queue.id;
    let w::Evaluation {
        reasons,
        verdicts,
        closed_gpus,
        preempt,
    } = e;
    if verdicts.len() > ids.len() {
        return bad(format!(
            "{} verdicts for {} queued tasks",
            verdicts.len(),
            ids.len()
        ));
    }
    if closed_gpus.len() > s.gpus.len() || preempt.len() > s.running.len() {
        return bad("more GPUs closed or tasks preempted than exist".into());
    }
    let uses = verdicts.len() + closed_gpus.len() + preempt.len();
    let reasons = Reasons::read(&reasons, uses, "verdicts, closed GPUs and preemptions")?;
    let reason = |i: u32| reasons.get(i);
    let mut judged = vec![false; ids.len()];
    let mut out = p::Evaluation {
        verdicts: Vec::with_capacity(verdicts.len()),
        scores: Vec::new(),
        closed_gpus: Vec::with_capacity(closed_gpus.len()),
        preempt: Vec::with_capacity(preempt.len()),
    };
    for v in verdicts {
        let at = v.task as usize;
        let (Some(&task), Some(seen)) = (ids.get(at), judged.get_mut(at)) else {
            return bad(format!(
                "verdict for queue index {}, which is not in the queue ({} tasks)",
                v.task,
                ids.len()
            ));
        };
        if std::mem::replace(seen, true) {
            return bad(format!("two verdicts for task {task}"));
        }
        let verdict = match v.verdict {
            w::Verdict::Allow(n) => p::Verdict::Allow(n),
            w::Verdict::Defer(d) => p::Verdict::Defer(p::Deferral {
                reason: reason(d.reason)?,
                until: d.until,
            }),
            w::Verdict::Reject(r) => p::Verdict::Reject(reason(r)?),
        };
        out.verdicts.push(p::TaskVerdict { task, verdict });
    }
    closures_and_preemptions(
        s,
        closed_gpus.iter().map(|g| (g.index, g.reason)),
        preempt.iter().map(|q| (q.task, q.reason)),
        reason,
        &mut out,
    )?;
    Ok(out)
}

/// An answer's reasons, each checked for size and made shareable once (one
/// reason often answers every task). The same in 0.2's answers and the
/// incremental policy's.
pub(crate) struct Reasons(Vec<std::sync::Arc<str>>);

impl Reasons {
    /// Checks `reasons` (no more than the `uses` items that name one, which
    /// `what` lists; none over [`MAX_REASON`] bytes) and keeps them.
    pub(crate) fn read(
        reasons: &[String],
        uses: usize,
        what: &str,
    ) -> Result<Reasons, PluginError> {
        if reasons.len() > uses {
            return bad(format!("{} reasons for {uses} {what}", reasons.len()));
        }
        if let Some(i) = reasons.iter().position(|r| r.len() > MAX_REASON) {
            return bad(format!("reason {i} is longer than {MAX_REASON} bytes"));
        }
        Ok(Reasons(reasons.iter().map(|r| r.as_str().into()).collect()))
    }

    /// Reason `i`, or why the answer is refused.
    pub(crate) fn get(&self, i: u32) -> Result<std::sync::Arc<str>, PluginError> {
        match self.0.get(i as usize) {
            Some(r) => Ok(std::sync::Arc::clone(r)),
            None => bad(format!(
                "names reason {i}, but the answer has {} reasons",
                self.0.len()
            )),
        }
    }
}

/// Reads an answer's closed GPUs (`(GPU index, reason)`) and preemptions
/// (`(position in s.running, reason)`) into `out`, each checked: the GPU
/// must exist, the running task be there, the reason be in the answer.
/// The same in 0.2's answers and the incremental policy's.
pub(crate) fn closures_and_preemptions(
    s: &p::Snapshot,
    closed: impl Iterator<Item = (u32, u32)>,
    preempt: impl Iterator<Item = (u32, u32)>,
    reason: impl Fn(u32) -> Result<std::sync::Arc<str>, PluginError>,
    out: &mut p::Evaluation,
) -> Result<(), PluginError> {
    for (index, r) in closed {
        if !s.gpus.iter().any(|x| x.index == index) {
            return bad(format!("closes GPU {index} which does not exist"));
        }
        out.closed_gpus.push(p::ClosedGpu {
            index,
            reason: reason(r)?.to_string(),
        });
    }
    for (at, r) in preempt {
        let Some(task) = s.running.get(at as usize) else {
            return bad(format!(
                "preempts running index {at}, which is not running ({} running)",
                s.running.len()
            ));
        };
        out.preempt.push(p::Preemption {
            task: task.id,
            reason: reason(r)?.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::tests::{snapshot, task};

    fn answer(verdicts: Vec<w::TaskVerdict>, reasons: &[&str]) -> w::Evaluation {
        w::Evaluation {
            reasons: reasons.iter().map(|r| r.to_string()).collect(),
            verdicts,
            closed_gpus: Vec::new(),
            preempt: Vec::new(),
        }
    }

    fn defer(task: u32, reason: u32) -> w::TaskVerdict {
        w::TaskVerdict {
            task,
            verdict: w::Verdict::Defer(w::Deferral {
                reason,
                until: Some(7),
            }),
        }
    }

    fn two() -> p::Snapshot {
        snapshot(vec![
            task(10, "a", p::Priority::Normal, 0),
            task(20, "a", p::Priority::Normal, 0),
        ])
    }

    /// `e` read as the answer to `s`.
    fn read_for(s: &p::Snapshot, e: w::Evaluation) -> Result<p::Evaluation, PluginError> {
        read(s, &super::super::wire(s).unwrap(), e)
    }

    #[test]
    fn positions_become_ids_and_a_shared_reason_is_given_to_each() {
        let e = read_for(&two(), answer(vec![defer(1, 0), defer(0, 0)], &["later"])).unwrap();
        let got: Vec<(i64, String)> = e
            .verdicts
            .iter()
            .map(|v| match &v.verdict {
                p::Verdict::Defer(d) => (v.task, d.reason.to_string()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got, [(20, "later".into()), (10, "later".into())]);
    }

    #[test]
    fn indices_out_of_range_are_invalid_answers_not_panics() {
        let s = two();
        for (e, says) in [
            (answer(vec![defer(2, 0)], &["x"]), "queue index 2"),
            (answer(vec![defer(u32::MAX, 0)], &["x"]), "not in the queue"),
            (answer(vec![defer(0, 1)], &["x"]), "names reason 1"),
            (
                answer(vec![defer(0, u32::MAX)], &[]),
                "answer has 0 reasons",
            ),
            (
                answer(vec![defer(0, 0), defer(0, 0)], &["x"]),
                "two verdicts for task 10",
            ),
            (answer(vec![defer(0, 0)], &["x", "y"]), "2 reasons for 1"),
            (
                answer(vec![], &[&"r".repeat(MAX_REASON + 1)]),
                "1 reasons for 0",
            ),
        ] {
            let err = read_for(&s, e).unwrap_err();
            assert_eq!(err.cause(), "invalid-answer");
            assert!(err.to_string().contains(says), "{says}: {err}");
        }
        let mut preempt = answer(vec![], &["x"]);
        preempt.preempt.push(w::Preemption { task: 0, reason: 0 });
        let err = read_for(&s, preempt).unwrap_err();
        assert!(
            err.to_string().contains("tasks preempted than exist"),
            "{err}"
        );
        let mut gpu = answer(vec![], &["x"]);
        gpu.closed_gpus.push(w::ClosedGpu {
            index: 9,
            reason: 0,
        });
        let err = read_for(&s, gpu).unwrap_err();
        assert!(
            err.to_string().contains("GPU 9 which does not exist"),
            "{err}"
        );
        let long = answer(vec![defer(0, 0)], &[&"r".repeat(MAX_REASON + 1)]);
        let err = read_for(&s, long).unwrap_err();
        assert!(err.to_string().contains("longer than 4096"), "{err}");
    }
}
