//! Checks a policy's answer against the snapshot it was given: every task id
//! must be in the queue (or, for preemption, running), every GPU must exist,
//! and sizes stay within bounds. One bad item rejects the whole answer.

use std::collections::HashSet;

pub use super::limits::MAX_REASON;
use super::policy::{Evaluation, PluginError, Snapshot, Verdict};

/// Validates `e` for `s`.
pub fn check(s: &Snapshot, e: &Evaluation) -> Result<(), PluginError> {
    let queued: HashSet<i64> = s.queue.iter().map(|t| t.id).collect();
    let running: HashSet<i64> = s.running.iter().map(|t| t.id).collect();
    let gpus: HashSet<u32> = s.gpus.iter().map(|g| g.index).collect();
    let bad = |m: String| Err(PluginError::Invalid(m));
    if e.verdicts.len() > s.queue.len() {
        return bad(format!(
            "{} verdicts for {} queued tasks",
            e.verdicts.len(),
            s.queue.len()
        ));
    }
    if e.closed_gpus.len() > s.gpus.len() || e.preempt.len() > s.running.len() {
        return bad("more GPUs closed or tasks preempted than exist".into());
    }
    let mut seen = HashSet::with_capacity(e.verdicts.len());
    for v in &e.verdicts {
        if !queued.contains(&v.task) {
            return bad(format!(
                "verdict for task {} which is not in the queue",
                v.task
            ));
        }
        if !seen.insert(v.task) {
            return bad(format!("two verdicts for task {}", v.task));
        }
        let reason = match &v.verdict {
            Verdict::Allow(_) => "",
            Verdict::Defer(d) => &d.reason,
            Verdict::Reject(r) => r,
        };
        if reason.len() > MAX_REASON {
            return bad(format!(
                "reason for task {} longer than {MAX_REASON} bytes",
                v.task
            ));
        }
    }
    for g in &e.closed_gpus {
        if !gpus.contains(&g.index) {
            return bad(format!("closes GPU {} which does not exist", g.index));
        }
        if g.reason.len() > MAX_REASON {
            return bad(format!("reason for GPU {} too long", g.index));
        }
    }
    for p in &e.preempt {
        if !running.contains(&p.task) {
            return bad(format!("preempts task {} which is not running", p.task));
        }
        if p.reason.len() > MAX_REASON {
            return bad(format!(
                "preemption reason for task {} longer than {MAX_REASON} bytes",
                p.task
            ));
        }
    }
    Ok(())
}
