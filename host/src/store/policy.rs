//! What scheduling policies need from the store: running tasks, recent usage,
//! and recording their verdicts (a rejection, a waiting reason, a failure).

use rusqlite::params;

use super::{Result, Store, event, exec, row};
use crate::task::model::Priority;

/// A running task as a policy sees it.
#[derive(Debug, Clone)]
pub struct RunningInfo {
    /// Task id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Project.
    pub project: String,
    /// Priority.
    pub priority: Priority,
    /// GPU indices held.
    pub gpus: Vec<u32>,
    /// When its run started (Unix ms).
    pub started_at: i64,
    /// A policy may preempt it.
    pub preemptible: bool,
}

/// One run's use of the machine.
#[derive(Debug, Clone)]
pub struct UsageInfo {
    /// Project.
    pub project: std::sync::Arc<str>,
    /// GPUs held.
    pub gpus: u32,
    /// Started (Unix ms).
    pub started_at: i64,
    /// Ended (Unix ms), if it has.
    pub ended_at: Option<i64>,
}

pub(super) fn gpu_list(s: Option<String>) -> Vec<u32> {
    s.map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

impl Store {
    /// Tasks with a run in progress.
    pub fn running_tasks(&self) -> Result<Vec<RunningInfo>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT t.id, t.name, t.project, t.priority, r.gpus, r.started_at,
                    COALESCE(json_extract(t.spec, '$.preemptible'), 0)
             FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.state = 'running' ORDER BY r.id",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunningInfo {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    project: r.get(2)?,
                    priority: Priority::from_rank(r.get(3)?),
                    gpus: gpu_list(r.get(4)?),
                    started_at: r.get(5)?,
                    preemptible: r.get::<_, i64>(6)? != 0,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Runs that started at or after `since` (Unix ms).
    pub fn usage_since(&self, since: i64) -> Result<Vec<UsageInfo>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT t.project, r.gpus, r.started_at, r.finished_at
             FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.started_at >= ?1 ORDER BY r.id",
        )?;
        let rows = stmt
            .query_map([since], |r| {
                Ok(UsageInfo {
                    project: r.get::<_, String>(0)?.into(),
                    gpus: gpu_list(r.get(1)?).len() as u32,
                    started_at: r.get(2)?,
                    ended_at: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// A policy rejected a waiting task: it fails without a run, and its
    /// after-ok dependants are blocked.
    pub fn reject_task(&mut self, id: i64, reason: &str, now: i64) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let changed = exec(
            &tx,
            "UPDATE tasks SET state = 'failed', reason = ?2, finished_at = ?3 WHERE id = ?1 AND state = 'queued'",
            params![id, reason, now],
        )?;
        if changed == 1 {
            event(&tx, now, Some(id), None, "rejected", reason)?;
            super::deps::block_dependants_of(&tx, id, now)?;
        }
        tx.commit()?;
        Ok(changed == 1)
    }

    /// Sets (or clears) why a queued task waits, with an event when it changes.
    /// `event`: also write a `waiting` event (when the cause changed, not
    /// only a countdown in the text).
    pub fn set_wait_reason(
        &mut self,
        id: i64,
        reason: Option<&str>,
        event_too: bool,
        now: i64,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        let changed = exec(
            &tx,
            "UPDATE tasks SET reason = ?2 WHERE id = ?1 AND state = 'queued' AND reason IS NOT ?2",
            params![id, reason],
        )?;
        if changed == 1 && event_too {
            event(
                &tx,
                now,
                Some(id),
                None,
                "waiting",
                reason.unwrap_or("no policy defers it"),
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Marks a running task for preemption; returns its run and supervisor to
    /// signal, or None when it is not running or already being stopped.
    pub fn request_preempt(
        &mut self,
        task: i64,
        reason: &str,
        now: i64,
    ) -> Result<Option<(i64, Option<i64>)>> {
        let tx = self.conn.transaction()?;
        let changed = exec(
            &tx,
            "UPDATE tasks SET cancel_requested = ?2 WHERE id = ?1 AND state = 'running' AND cancel_requested = 0",
            params![task, super::queue::PREEMPT],
        )?;
        if changed == 0 {
            return Ok(None);
        }
        let run: (i64, Option<i64>) = row(
            &tx,
            "SELECT id, supervisor_pid FROM runs WHERE task_id = ?1 AND state = 'running'",
            [task],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        event(&tx, now, Some(task), Some(run.0), "preempting", reason)?;
        tx.commit()?;
        Ok(Some(run))
    }

    /// Stores verdicts that changed: (task, plugin, verdict, reason).
    pub fn record_verdicts(
        &mut self,
        changed: &[(i64, String, String, String)],
        now: i64,
    ) -> Result<()> {
        if changed.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction()?;
        for (task, plugin, verdict, reason) in changed {
            exec(
                &tx,
                "INSERT INTO policy_verdicts (task_id, plugin, verdict, reason, since) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (task_id, plugin) DO UPDATE SET verdict = ?3, reason = ?4, since = ?5",
                params![task, plugin, verdict, reason, now],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every policy's current verdict on a task: (plugin, verdict, reason, since).
    pub fn verdicts(&self, task: i64) -> Result<Vec<(String, String, String, i64)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT plugin, verdict, reason, since FROM policy_verdicts WHERE task_id = ?1 ORDER BY plugin",
        )?;
        let rows = stmt
            .query_map([task], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Records a plugin failure as an event (no task).
    pub fn plugin_event(&mut self, kind: &str, message: &str, now: i64) -> Result<()> {
        self.note_event(None, kind, message, now)
    }

    /// Records an event about a task (or about none).
    pub fn note_event(
        &mut self,
        task: Option<i64>,
        kind: &str,
        message: &str,
        now: i64,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        event(&tx, now, task, None, kind, message)?;
        tx.commit()?;
        Ok(())
    }
}
