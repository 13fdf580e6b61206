//! Recovery's one write: a run the database lost, put back from what its
//! folder proves (its manifest names the task, the attempt and the task's
//! spec). The run goes back as `running`; the next daemon start looks at it
//! as at every run it finds running (alive, ended with a status, or gone)
//! and records it the usual way.

use rusqlite::{OptionalExtension, params};

use super::{Result, Store, event, exec, row};
use crate::task::model::TaskSpec;

/// A run folder's evidence.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The run's id (its folder's name).
    pub run: i64,
    /// Its task's id.
    pub task: i64,
    /// Its attempt number.
    pub attempt: i64,
    /// The task's spec, as the run's manifest recorded it.
    pub spec: TaskSpec,
    /// The run folder.
    pub dir: String,
    /// A live supervisor of the run, if one was found.
    pub supervisor: Option<i64>,
    /// When the run started (Unix ms).
    pub started_at: i64,
}

impl Store {
    /// Puts back a run (and, when the database lost it too, its task) from
    /// its folder: `Ok(Ok(true))` when the task was recreated as well,
    /// `Ok(Err(why))` when the folder does not belong to what the database
    /// holds (a task that ended since, a sweep or template, another owner):
    /// nothing is changed then.
    pub fn adopt_run(
        &mut self,
        e: &Evidence,
        now: i64,
    ) -> Result<std::result::Result<bool, String>> {
        let tx = self.conn.transaction()?;
        let known: Option<(String, String, Option<u32>)> = row(
            &tx,
            "SELECT kind, state, owner_uid FROM tasks WHERE id = ?1",
            [e.task],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
        if let Some((kind, state, owner)) = &known {
            let claimed = e.spec.owner.as_ref().map(|o| o.uid);
            let refusal = if kind != "task" {
                Some(format!(
                    "its manifest names task {}, which is a {kind}, not a task",
                    e.task
                ))
            } else if !matches!(state.as_str(), "queued" | "running") {
                Some(format!(
                    "task {} is {state} already; a run of it the database does not know is not put back",
                    e.task
                ))
            } else if *owner != claimed {
                Some(format!(
                    "its manifest gives task {} another owner than the database does",
                    e.task
                ))
            } else {
                None
            };
            if let Some(why) = refusal {
                return Ok(Err(why));
            }
        }
        let recreated = known.is_none();
        if recreated {
            exec(
                &tx,
                "INSERT INTO tasks (id, kind, name, project, priority, state, spec, submitted_at,
                                    eligible_at, attempts, owner_uid, owner)
                 VALUES (?1, 'task', ?2, ?3, ?4, 'running', ?5, ?6, ?6, ?7, ?8, ?9)",
                params![
                    e.task,
                    e.spec.name,
                    e.spec.project,
                    e.spec.priority.rank(),
                    serde_json::to_string(&e.spec)?,
                    e.started_at,
                    e.attempt,
                    e.spec.owner.as_ref().map(|o| o.uid),
                    e.spec.owner.as_ref().map(|o| &o.name),
                ],
            )?;
            event(
                &tx,
                now,
                Some(e.task),
                Some(e.run),
                "recovered",
                &format!(
                    "task recreated by `nightjar daemon recover` from run {}'s folder (the database had lost it)",
                    e.run
                ),
            )?;
        } else {
            exec(
                &tx,
                "UPDATE tasks SET state = 'running', reason = NULL, finished_at = NULL,
                                  attempts = MAX(attempts, ?2)
                 WHERE id = ?1",
                params![e.task, e.attempt],
            )?;
        }
        // An attempt number another run of the task holds goes past it.
        let attempt: i64 = row(
            &tx,
            "SELECT CASE WHEN EXISTS (SELECT 1 FROM runs WHERE task_id = ?1 AND attempt = ?2)
                    THEN (SELECT MAX(attempt) + 1 FROM runs WHERE task_id = ?1) ELSE ?2 END",
            params![e.task, e.attempt],
            |r| r.get(0),
        )?;
        exec(
            &tx,
            "INSERT INTO runs (id, task_id, attempt, state, run_dir, supervisor_pid, submitted_at,
                               eligible_at, started_at)
             VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?6, ?6)",
            params![e.run, e.task, attempt, e.dir, e.supervisor, e.started_at],
        )?;
        event(
            &tx,
            now,
            Some(e.task),
            Some(e.run),
            "recovered",
            &format!(
                "run {} put back by `nightjar daemon recover` from its folder{}; its end is recorded at the next start",
                e.run,
                if e.supervisor.is_some() {
                    " (its supervisor is alive)"
                } else {
                    ""
                }
            ),
        )?;
        exec(
            &tx,
            "UPDATE store_meta SET tasks_issued = MAX(tasks_issued, ?1), runs_issued = MAX(runs_issued, ?2)",
            params![e.task, e.run],
        )?;
        tx.commit()?;
        Ok(Ok(recreated))
    }
}
