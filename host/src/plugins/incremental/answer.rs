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
    // Deferrals and rejections by place, put in queue order; a place
    // named twice is refused. (Plugins write them in queue order, so the
    // sort finds them sorted.)
    let mut named: Vec<(u32, p::Verdict)> =
        Vec::with_capacity(deferred.task.len() + rejected.task.len());
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
        named.push((at, p::Verdict::Defer(d)));
    }
    for (&at, &r) in rejected.task.iter().zip(&rejected.reason) {
        named.push((at, p::Verdict::Reject(reason(r)?)));
    }
    named.sort_by_key(|&(at, _)| at);
    if let Some(w) = named.windows(2).find(|w| w[0].0 == w[1].0) {
        return bad(format!(
            "defers or rejects task {} twice",
            queue[w[0].0 as usize].id
        ));
    }
    // The scores stay one column; a named place's score is not read.
    let mut scores = scores;
    if !scores.is_empty() {
        for &(at, _) in &named {
            scores[at as usize] = 0;
        }
    }
    let mut out = p::Evaluation {
        verdicts: named
            .into_iter()
            .map(|(at, verdict)| p::TaskVerdict {
                task: queue[at as usize].id,
                verdict,
            })
            .collect(),
        scores,
        closed_gpus: Vec::with_capacity(closed_gpus.len()),
        preempt: Vec::with_capacity(preempt.len()),
    };
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
