//! Dependencies after a task's fate is known: after-ok dependants of a task
//! that failed or was cancelled are blocked (and theirs in turn), a fresh
//! submission whose dependency already failed is blocked at once, and a retry
//! unblocks what waited on it.

use rusqlite::{OptionalExtension, Transaction, params};

use super::{Result, event, exec, row};

/// Marks queued after-ok dependants of a failed or cancelled task blocked,
/// and theirs in turn.
pub(super) fn block_dependants_of(tx: &Transaction, failed: i64, now: i64) -> Result<()> {
    let mut stack = vec![failed];
    while let Some(id) = stack.pop() {
        let name: String = row(tx, "SELECT name FROM tasks WHERE id = ?1", [id], |r| {
            r.get(0)
        })?;
        let dependants: Vec<i64> = {
            let mut stmt = tx.prepare_cached(
                "SELECT d.task_id FROM deps d JOIN tasks t ON t.id = d.task_id
                 WHERE d.dep_id = ?1 AND d.kind = 'after-ok' AND t.state IN ('queued', 'held')",
            )?;
            stmt.query_map([id], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?
        };
        for d in dependants {
            let reason =
                format!("dependency {id} ({name}) did not succeed; `nightjar retry {id}` unblocks");
            exec(
                tx,
                "UPDATE tasks SET state = 'blocked', reason = ?2 WHERE id = ?1",
                params![d, reason],
            )?;
            event(tx, now, Some(d), None, "blocked", &reason)?;
            let (dname, project): (String, String) = row(
                tx,
                "SELECT name, project FROM tasks WHERE id = ?1",
                [d],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            super::outbox::outbox(
                tx,
                now,
                "task-blocked",
                super::outbox::Severity::Warning,
                Some(d),
                None,
                Some(&project),
                serde_json::json!({ "name": dname, "reason": reason }),
            )?;
            stack.push(d);
        }
    }
    Ok(())
}

/// Blocks a freshly submitted task at once if an after-ok dependency already failed.
pub(super) fn block_if_dependency_failed(tx: &Transaction, task: i64, now: i64) -> Result<()> {
    let bad: Option<(i64, String)> = row(tx,
            "SELECT p.id, p.name FROM deps d JOIN tasks p ON p.id = d.dep_id
             WHERE d.task_id = ?1 AND d.kind = 'after-ok' AND p.state IN ('failed', 'cancelled', 'blocked')",
            [task],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if let Some((id, name)) = bad {
        let reason =
            format!("dependency {id} ({name}) did not succeed; `nightjar retry {id}` unblocks");
        exec(
            tx,
            "UPDATE tasks SET state = 'blocked', reason = ?2 WHERE id = ?1 AND state IN ('queued', 'held')",
            params![task, reason],
        )?;
        event(tx, now, Some(task), None, "blocked", &reason)?;
    }
    Ok(())
}

/// Puts tasks blocked by `id` back in the queue once none of their after-ok
/// dependencies has failed, and theirs in turn.
pub(super) fn unblock_dependants(tx: &Transaction, id: i64, now: i64) -> Result<()> {
    let mut stack = vec![id];
    while let Some(id) = stack.pop() {
        let dependants: Vec<i64> = {
            let mut stmt = tx.prepare_cached(
                "SELECT d.task_id FROM deps d JOIN tasks t ON t.id = d.task_id
                 WHERE d.dep_id = ?1 AND t.state = 'blocked'",
            )?;
            stmt.query_map([id], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?
        };
        for d in dependants {
            let still_bad: bool = row(tx,
                "SELECT EXISTS (SELECT 1 FROM deps d JOIN tasks p ON p.id = d.dep_id
                 WHERE d.task_id = ?1 AND d.kind = 'after-ok' AND p.state IN ('failed', 'cancelled', 'blocked'))",
                [d],
                |r| r.get(0),
            )?;
            if !still_bad {
                exec(
                    tx,
                    "UPDATE tasks SET state = 'queued', reason = NULL WHERE id = ?1",
                    [d],
                )?;
                event(
                    tx,
                    now,
                    Some(d),
                    None,
                    "unblocked",
                    &format!("dependency {id} queued again"),
                )?;
                stack.push(d);
            }
        }
    }
    Ok(())
}
