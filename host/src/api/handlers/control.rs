//! The verbs that change tasks (`cancel`, `hold`, `release`, `retry`,
//! `priority`): who may, and the audit entry when someone acts on a task
//! that is not theirs or changes a priority.

use crate::access::Caller;
use crate::api::{Cancelled, Changed};
use crate::daemon::Daemon;
use crate::store::AuditEntry;
use crate::task::model::Priority;

/// The task-changing verbs that share one shape.
#[derive(Debug, Clone, Copy)]
pub(super) enum Change {
    Hold,
    Release,
    Retry { no_cache: bool },
}

impl Change {
    fn name(self) -> &'static str {
        match self {
            Change::Hold => "hold",
            Change::Release => "release",
            Change::Retry { .. } => "retry",
        }
    }
}

/// Checks that `caller` may change task `id`; returns its owner's uid.
fn allowed(d: &Daemon, caller: &Caller, id: i64) -> anyhow::Result<u32> {
    let owner = d.store().task(id)?.owner_uid;
    d.access.may_change(caller, id, owner)?;
    Ok(d.access.owner_uid(owner))
}

/// Appends to the audit log; a failure is logged, not returned (the
/// action itself is already done).
pub(crate) fn audit(d: &Daemon, caller: &Caller, action: &str, task: Option<i64>, detail: String) {
    let entry = AuditEntry {
        uid: caller.uid,
        user: &caller.name,
        action,
        task,
        detail,
    };
    if let Err(e) = d.store().audit(d.now_ms(), &entry) {
        tracing::error!("cannot append to the audit log ({entry:?}): {e}");
    }
}

/// Audits an act on another user's task.
fn audit_if_others(d: &Daemon, caller: &Caller, owner: u32, action: &str, id: i64, what: String) {
    if owner != caller.uid {
        let whose = crate::users::name_of(owner);
        audit(
            d,
            caller,
            action,
            Some(id),
            format!("task of {whose}: {what}"),
        );
    }
}

/// `cancel ID`.
pub(super) fn cancel(d: &Daemon, caller: &Caller, id: i64) -> anyhow::Result<Cancelled> {
    let owner = allowed(d, caller, id)?;
    let effect = d.store().cancel(id, d.now_ms())?;
    for (run, pid) in &effect.to_signal {
        d.cancel_run(*run, *pid);
    }
    d.changed();
    let done = Cancelled {
        cancelled: effect.cancelled,
        stopping: effect.to_signal.iter().map(|r| r.0).collect(),
    };
    audit_if_others(
        d,
        caller,
        owner,
        "cancel",
        id,
        format!(
            "{} cancelled, {} run(s) stopping",
            done.cancelled.len(),
            done.stopping.len()
        ),
    );
    Ok(done)
}

/// `hold`, `release`, `retry`.
pub(super) fn change(d: &Daemon, caller: &Caller, id: i64, c: Change) -> anyhow::Result<Changed> {
    let owner = allowed(d, caller, id)?;
    let now = d.now_ms();
    let n = {
        let mut s = d.store();
        match c {
            Change::Hold => s.hold(id, now)?,
            Change::Release => s.release(id, now)?,
            Change::Retry { no_cache } => {
                // A retry by its owner queues again: their `queued` quota
                // counts it, as it counts a submission.
                if caller.uid == owner {
                    let adding = s.retry_adds(id, no_cache)?;
                    d.check_queued_quota(&s, caller, adding)?;
                }
                s.retry(id, now, no_cache)?
            }
        }
    };
    d.changed();
    audit_if_others(
        d,
        caller,
        owner,
        c.name(),
        id,
        format!("{n} task(s) changed"),
    );
    Ok(Changed { tasks: n })
}

/// `priority ID LEVEL`: administrators only, always audited.
pub(super) fn priority(
    d: &Daemon,
    caller: &Caller,
    id: i64,
    p: Priority,
) -> anyhow::Result<Changed> {
    d.access.admin_only(caller, "changing a priority")?;
    let (n, was) = d.store().set_priority(id, p, d.now_ms())?;
    d.changed();
    audit(
        d,
        caller,
        "priority",
        Some(id),
        format!("{} -> {} ({n} task(s))", was.as_str(), p.as_str()),
    );
    Ok(Changed { tasks: n })
}
