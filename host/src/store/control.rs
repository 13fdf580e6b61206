//! User actions on tasks: cancel, hold, release, retry. A sweep id acts on
//! every member; a recurring template's cancel stops its firings.

use rusqlite::{OptionalExtension, Transaction, params};

use super::deps::{block_dependants_of, unblock_dependants};
use super::{Result, Store, StoreError, TaskKind, TaskState, event, exec, state_of};

/// What the daemon must still do after a cancel: signal these runs' supervisors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CancelEffect {
    /// Tasks that ended cancelled at once.
    pub cancelled: Vec<i64>,
    /// Running runs to stop: (run id, supervisor pid).
    pub to_signal: Vec<(i64, Option<i64>)>,
}

/// The tasks an id stands for: the task, or the members of a sweep.
fn targets(tx: &Transaction, id: i64) -> Result<Vec<(i64, TaskState)>> {
    let (state, kind) = state_of(tx, id)?;
    if kind != TaskKind::Sweep {
        return Ok(vec![(id, state)]);
    }
    let mut stmt =
        tx.prepare_cached("SELECT id, state FROM tasks WHERE parent_id = ?1 ORDER BY id")?;
    let rows = stmt
        .query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(i, s)| TaskState::parse(&s).map(|s| (i, s)))
        .collect())
}

impl Store {
    /// Cancels a task (or every member of a sweep, or a recurring template).
    pub fn cancel(&mut self, id: i64, now: i64) -> Result<CancelEffect> {
        let tx = self.conn.transaction()?;
        let mut effect = CancelEffect::default();
        for (task, state) in targets(&tx, id)? {
            match state {
                TaskState::Queued | TaskState::Held | TaskState::Blocked | TaskState::Scheduled => {
                    exec(
                        &tx,
                        // A cancelled recurring template fires no more: no next firing.
                        "UPDATE tasks SET state = 'cancelled', reason = 'cancelled by user', finished_at = ?2, next_fire_at = NULL WHERE id = ?1",
                        params![task, now],
                    )?;
                    event(&tx, now, Some(task), None, "cancelled", "cancelled by user")?;
                    block_dependants_of(&tx, task, now)?;
                    effect.cancelled.push(task);
                }
                TaskState::Running => {
                    exec(
                        &tx,
                        "UPDATE tasks SET cancel_requested = 1 WHERE id = ?1",
                        [task],
                    )?;
                    let mut stmt = tx.prepare_cached(
                        "SELECT id, supervisor_pid FROM runs WHERE task_id = ?1 AND state = 'running'",
                    )?;
                    let runs = stmt
                        .query_map([task], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    event(
                        &tx,
                        now,
                        Some(task),
                        None,
                        "cancelling",
                        "SIGTERM, then SIGKILL after the grace period",
                    )?;
                    effect.to_signal.extend(runs);
                }
                _ if targets_single(id, task) => {
                    return Err(StoreError::Invalid(format!(
                        "task {task} is {}; only waiting or running tasks can be cancelled",
                        state.as_str()
                    )));
                }
                _ => {}
            }
        }
        tx.commit()?;
        Ok(effect)
    }

    /// Whether a user asked to cancel task `id` while it runs.
    pub fn cancel_requested(&mut self, id: i64) -> Result<bool> {
        Ok(self.conn.query_row(
            "SELECT cancel_requested = ?2 FROM tasks WHERE id = ?1",
            params![id, super::queue::CANCEL],
            |r| r.get(0),
        )?)
    }

    /// Holds waiting tasks: they keep their place but do not start.
    pub fn hold(&mut self, id: i64, now: i64) -> Result<usize> {
        self.move_state(id, now, TaskState::Queued, TaskState::Held, "held")
    }

    /// Releases held tasks back into the queue. A blocked task's remembered
    /// hold (it was held when its dependency failed) is dropped, so it is
    /// queued, not held, once the dependency is retried.
    pub fn release(&mut self, id: i64, now: i64) -> Result<usize> {
        self.move_state(id, now, TaskState::Held, TaskState::Queued, "released")
    }

    /// Queues a failed, cancelled or blocked task again with a fresh attempt
    /// budget, and unblocks the tasks that waited on it.
    pub fn retry(&mut self, id: i64, now: i64, no_cache: bool) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let mut n = 0;
        for (task, state) in targets(&tx, id)? {
            if !retryable(&tx, task, state, no_cache)? {
                if targets_single(id, task) {
                    let cached = if no_cache {
                        ""
                    } else {
                        " (`retry --no-cache` also runs one that succeeded from the result cache)"
                    };
                    return Err(StoreError::Invalid(format!(
                        "task {task} is {}; only failed, cancelled or blocked tasks can be retried{cached}",
                        state.as_str()
                    )));
                }
                continue;
            }
            exec(
                &tx,
                "UPDATE tasks SET state = 'queued', reason = NULL, attempts = 0, not_before = NULL,
                        finished_at = NULL, cancel_requested = 0, needs_gpu_free = NULL,
                        cache_bypass = ?2, held_when_blocked = 0 WHERE id = ?1",
                params![task, no_cache],
            )?;
            let note = if no_cache {
                "queued again by user, to run for real (--no-cache)"
            } else {
                "queued again by user"
            };
            event(&tx, now, Some(task), None, "retry", note)?;
            unblock_dependants(&tx, task, now)?;
            n += 1;
        }
        tx.commit()?;
        Ok(n)
    }

    /// How many tasks `retry(id)` would move back into the waiting count
    /// (failed or cancelled ones; a blocked task already waits).
    pub fn retry_adds(&mut self, id: i64, no_cache: bool) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let mut n = 0;
        for (task, state) in targets(&tx, id)? {
            if state != TaskState::Blocked && retryable(&tx, task, state, no_cache)? {
                n += 1;
            }
        }
        Ok(n)
    }

    fn move_state(
        &mut self,
        id: i64,
        now: i64,
        from: TaskState,
        to: TaskState,
        verb: &str,
    ) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let mut n = 0;
        for (task, state) in targets(&tx, id)? {
            if state == TaskState::Blocked {
                // Blocked stays blocked: the hold it takes when unblocked
                // is what `hold` and `release` change.
                let remember = to == TaskState::Held;
                let changed = exec(
                    &tx,
                    "UPDATE tasks SET held_when_blocked = ?2
                     WHERE id = ?1 AND state = 'blocked' AND held_when_blocked != ?2",
                    params![task, remember],
                )?;
                if changed > 0 {
                    let note = if remember {
                        "held by user while blocked: it is held, not queued, once its dependency is retried"
                    } else {
                        "released by user while blocked: it is queued once its dependency is retried"
                    };
                    event(&tx, now, Some(task), None, verb, note)?;
                    n += 1;
                    continue;
                }
            }
            if state != from {
                if targets_single(id, task) {
                    return Err(StoreError::Invalid(format!(
                        "task {task} is {}; only {} tasks can be {verb}",
                        state.as_str(),
                        from.as_str()
                    )));
                }
                continue;
            }
            exec(
                &tx,
                // A hold after disk-full ends with any move of the task.
                "UPDATE tasks SET state = ?2, reason = NULL, held_for_disk = NULL WHERE id = ?1 AND state = ?3",
                params![task, to.as_str(), from.as_str()],
            )?;
            event(&tx, now, Some(task), None, verb, &format!("{verb} by user"))?;
            n += 1;
        }
        tx.commit()?;
        Ok(n)
    }
}

/// True when the user named this very task (not a sweep it belongs to).
fn targets_single(asked: i64, task: i64) -> bool {
    asked == task
}

/// Whether `retry` may queue `task` again: a failed, cancelled or blocked
/// one; with `no_cache` also one that succeeded from the result cache.
fn retryable(tx: &Transaction, task: i64, state: TaskState, no_cache: bool) -> Result<bool> {
    Ok(match state {
        TaskState::Failed | TaskState::Cancelled | TaskState::Blocked => true,
        TaskState::Succeeded if no_cache => {
            let cached: Option<i64> = tx
                .query_row(
                    "SELECT cached_from FROM runs WHERE task_id = ?1 ORDER BY attempt DESC LIMIT 1",
                    [task],
                    |r| r.get(0),
                )
                .optional()?
                .flatten();
            cached.is_some()
        }
        _ => false,
    })
}
