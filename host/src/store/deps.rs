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
            // A held task remembers its hold (the old state is read on
            // the right of `=`).
            exec(
                tx,
                "UPDATE tasks SET state = 'blocked', reason = ?2, held_when_blocked = (state = 'held')
                 WHERE id = ?1",
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
            "UPDATE tasks SET state = 'blocked', reason = ?2, held_when_blocked = (state = 'held')
             WHERE id = ?1 AND state IN ('queued', 'held')",
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
                // Held when it was blocked: held again, to start only once released.
                let held: bool = row(
                    tx,
                    "SELECT held_when_blocked = 1 FROM tasks WHERE id = ?1",
                    [d],
                    |r| r.get(0),
                )?;
                exec(
                    tx,
                    "UPDATE tasks SET state = CASE WHEN held_when_blocked = 1 THEN 'held' ELSE 'queued' END,
                            reason = NULL, held_when_blocked = 0 WHERE id = ?1",
                    [d],
                )?;
                let note = if held {
                    format!(
                        "dependency {id} queued again; held, as it was (`nightjar release {d}` starts it)"
                    )
                } else {
                    format!("dependency {id} queued again")
                };
                event(tx, now, Some(d), None, "unblocked", &note)?;
                stack.push(d);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::store::tests::{outcome, store, submit};
    use crate::store::{NewRun, RunClass, Store, TaskState};

    /// One attempt of `task`, claimed at `at` and failed a second later.
    fn fail(s: &mut Store, dir: &std::path::Path, task: i64, at: i64) {
        let run = s.claim(task, &NewRun::default(), dir, at).unwrap().unwrap();
        s.finish_run(run.id, &outcome(RunClass::AppError, 1, at + 1_000))
            .unwrap();
    }

    #[test]
    fn a_held_task_blocked_by_its_dependency_is_held_again_once_the_dependency_is_retried() {
        let (dir, mut s) = store();
        let ids = submit(
            &mut s,
            "[[task]]\nname = \"a\"\ncommand = \"false\"\n\
             [[task]]\nname = \"b\"\ncommand = \"true\"\nafter = [\"a\"]\n\
             [[task]]\nname = \"c\"\ncommand = \"true\"\nafter = [\"a\"]\n",
        );
        let (a, b, c) = (ids[0], ids[1], ids[2]);
        let fail_a = |s: &mut Store, at: i64| fail(s, dir.path(), a, at);
        s.hold(b, 1_500).unwrap();
        fail_a(&mut s, 2_000);
        assert_eq!(s.task(b).unwrap().state, TaskState::Blocked);
        assert_eq!(s.task(c).unwrap().state, TaskState::Blocked);
        s.retry(a, 4_000, false).unwrap();
        // b was held by its user: it does not start until released.
        assert_eq!(s.task(b).unwrap().state, TaskState::Held);
        assert_eq!(
            s.task(c).unwrap().state,
            TaskState::Queued,
            "c was not held"
        );
        s.release(b, 5_000).unwrap();
        assert_eq!(s.task(b).unwrap().state, TaskState::Queued);
        // Blocked again, then retried itself by its user: queued, the old
        // hold forgotten with the block.
        s.hold(b, 6_000).unwrap();
        fail_a(&mut s, 7_000);
        assert_eq!(s.task(b).unwrap().state, TaskState::Blocked);
        s.retry(b, 9_000, false).unwrap();
        assert_eq!(s.task(b).unwrap().state, TaskState::Queued);
    }

    #[test]
    fn a_blocked_tasks_remembered_hold_is_dropped_by_release_and_taken_by_hold() {
        let (dir, mut s) = store();
        let ids = submit(
            &mut s,
            "[[task]]\nname = \"a\"\ncommand = \"false\"\n\
             [[task]]\nname = \"b\"\ncommand = \"true\"\nafter = [\"a\"]\n",
        );
        let (a, b) = (ids[0], ids[1]);
        let fail_a = |s: &mut Store, at: i64| fail(s, dir.path(), a, at);
        s.hold(b, 1_500).unwrap();
        fail_a(&mut s, 2_000);
        assert_eq!(s.task(b).unwrap().state, TaskState::Blocked);
        // Released while blocked: still blocked, and queued once unblocked.
        assert_eq!(s.release(b, 3_000).unwrap(), 1);
        assert_eq!(s.task(b).unwrap().state, TaskState::Blocked);
        assert!(
            s.release(b, 3_100).is_err(),
            "nothing left to release: refused as before"
        );
        s.retry(a, 4_000, false).unwrap();
        assert_eq!(s.task(b).unwrap().state, TaskState::Queued);
        // Held while blocked: held once unblocked.
        fail_a(&mut s, 5_000);
        assert_eq!(s.task(b).unwrap().state, TaskState::Blocked);
        assert_eq!(s.hold(b, 6_000).unwrap(), 1);
        assert_eq!(s.task(b).unwrap().state, TaskState::Blocked);
        s.retry(a, 7_000, false).unwrap();
        assert_eq!(s.task(b).unwrap().state, TaskState::Held);
    }
}
