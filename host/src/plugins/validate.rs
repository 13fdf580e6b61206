//! Checks a 0.1 policy's answer against the snapshot it was given: every
//! task id must be in the queue (or, for preemption, running), every GPU must
//! exist, and sizes stay within bounds. One bad item rejects the whole
//! answer. (A 0.2 answer is checked as it is read: `v0_2::read`.)

use std::collections::HashSet;

pub use super::limits::MAX_REASON;
use super::policy::{Evaluation, PluginError, Snapshot, Verdict};

/// The ids and GPUs of a snapshot, made once per pass.
#[derive(Debug, Default)]
pub struct Ids {
    queued: HashSet<i64>,
    running: HashSet<i64>,
    gpus: HashSet<u32>,
}

impl Ids {
    /// The ids and GPUs of `s`.
    pub fn of(s: &Snapshot) -> Ids {
        Ids {
            queued: s.queue.iter().map(|t| t.id).collect(),
            running: s.running.iter().map(|t| t.id).collect(),
            gpus: s.gpus.iter().map(|g| g.index).collect(),
        }
    }
}

/// Validates `e` for `s`.
pub fn check(s: &Snapshot, e: &Evaluation) -> Result<(), PluginError> {
    check_with(&Ids::of(s), s, e)
}

/// Validates `e` for `s`, whose ids are `ids`.
pub fn check_with(ids: &Ids, s: &Snapshot, e: &Evaluation) -> Result<(), PluginError> {
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
        if !ids.queued.contains(&v.task) {
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
        if !ids.gpus.contains(&g.index) {
            return bad(format!("closes GPU {} which does not exist", g.index));
        }
        if g.reason.len() > MAX_REASON {
            return bad(format!("reason for GPU {} too long", g.index));
        }
    }
    for p in &e.preempt {
        if !ids.running.contains(&p.task) {
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
