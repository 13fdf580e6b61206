//! An incremental plugin's answer (scores as one column, deferrals and
//! rejections as columns) read into the host's model and checked on the
//! way: columns of the right lengths, every index in range, no task
//! deferred or rejected twice, every GPU there, sizes within bounds. One bad
//! item rejects the whole answer, with what was wrong; nothing a plugin
//! sends can make the host panic.

use super::types as w;
use crate::plugins::policy::{self as p, PluginError};
use crate::plugins::v0_2::{Reasons, closures_and_preemptions};

fn bad<T>(message: String) -> Result<T, PluginError> {
    Err(PluginError::Invalid(message))
}

/// Reads `e`, the answer to a change that left the plugin holding `s`.
/// (Whether `e` is for the right generation is the caller's to check.)
pub fn read(s: &p::Snapshot, e: w::Evaluation) -> Result<p::Evaluation, PluginError> {
    let w::Evaluation {
        generation: _,
        reasons,
        scores,
        deferred,
        rejected,
        closed_gpus,
        preempt,
    } = e;
    let queue = &s.queue;
    if !scores.is_empty() && scores.len() != queue.len() {
        return bad(format!(
            "{} scores for {} queued tasks (give one per task, or none)",
            scores.len(),
            queue.len()
        ));
    }
    if deferred.reason.len() != deferred.task.len() || deferred.until.len() != deferred.task.len() {
        return bad(format!(
            "deferrals of {} tasks with {} reasons and {} times",
            deferred.task.len(),
            deferred.reason.len(),
            deferred.until.len()
        ));
    }
    if rejected.reason.len() != rejected.task.len() {
        return bad(format!(
            "rejections of {} tasks with {} reasons",
            rejected.task.len(),
            rejected.reason.len()
        ));
    }
    if deferred.task.len() + rejected.task.len() > queue.len() {
        return bad(format!(
            "{} deferrals and rejections for {} queued tasks",
            deferred.task.len() + rejected.task.len(),
            queue.len()
        ));
    }
    if closed_gpus.len() > s.gpus.len() || preempt.len() > s.running.len() {
        return bad("more GPUs closed or tasks preempted than exist".into());
    }
    let uses = deferred.task.len() + rejected.task.len() + closed_gpus.len() + preempt.len();
    let reasons = Reasons::read(
        &reasons,
        uses,
        "deferrals, rejections, closed GPUs and preemptions",
    )?;
    let reason = |i: u32| reasons.get(i);
    // The task is checked before the reason: a plugin that names a task
    // that is not there is told so first.
    let in_queue = |at: u32| {
        if (at as usize) < queue.len() {
            Ok(())
        } else {
            bad(format!(
                "judges queue index {at}, which is not in the queue ({} tasks)",
                queue.len()
            ))
        }
    };
    for &at in deferred.task.iter().chain(&rejected.task) {
        in_queue(at)?;
    }
    let mut out = p::Evaluation {
        verdicts: Vec::with_capacity(if scores.is_empty() {
            deferred.task.len() + rejected.task.len()
        } else {
            queue.len()
        }),
        closed_gpus: Vec::with_capacity(closed_gpus.len()),
        preempt: Vec::with_capacity(preempt.len()),
    };
    if deferred.task.is_empty() && rejected.task.is_empty() {
        // Scores alone: the usual answer of a policy that orders.
        out.verdicts
            .extend(queue.iter().zip(&scores).map(|(t, &n)| p::TaskVerdict {
                task: t.id,
                verdict: p::Verdict::Allow(n),
            }));
    } else {
        // What each position is told, when not its score.
        let mut judged: Vec<Option<p::Verdict>> = vec![None; queue.len()];
        let mut judge = |at: u32, v: p::Verdict| {
            let Some(slot) = judged.get_mut(at as usize) else {
                return in_queue(at);
            };
            if slot.replace(v).is_some() {
                return bad(format!(
                    "defers or rejects task {} twice",
                    queue[at as usize].id
                ));
            }
            Ok(())
        };
        for ((&at, &r), &until) in deferred
            .task
            .iter()
            .zip(&deferred.reason)
            .zip(&deferred.until)
        {
            let d = p::Deferral {
                reason: reason(r)?,
                until: (until != 0).then_some(until),
            };
            judge(at, p::Verdict::Defer(d))?;
        }
        for (&at, &r) in rejected.task.iter().zip(&rejected.reason) {
            judge(at, p::Verdict::Reject(reason(r)?))?;
        }
        for (i, (t, v)) in queue.iter().zip(judged).enumerate() {
            let verdict = match (v, scores.get(i)) {
                (Some(v), _) => v,
                (None, Some(&n)) => p::Verdict::Allow(n),
                (None, None) => continue,
            };
            out.verdicts.push(p::TaskVerdict {
                task: t.id,
                verdict,
            });
        }
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

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
