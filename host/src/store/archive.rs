//! Archives in the store: one row per succeeded run of a project with an
//! archive root, queued in the run's end transaction, taken by the archive
//! worker when due, and marked done (with its final path) or given its next
//! try after a failure. Output manifests and retention marks live on the
//! run rows.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, Transaction, params};

use super::{Result, Store, exec};
use crate::task::model::TaskSpec;
use nightjar_core::api::outputs::{ArchiveFailure, ArchiveState, ArchiveView, OutputManifest};

/// What the archive worker needs to archive one run.
#[derive(Debug, Clone)]
pub struct ArchiveJob {
    /// The run.
    pub run: i64,
    /// Its task.
    pub task: i64,
    /// The task's project and name (the final path's first two parts).
    pub project: String,
    /// The task's name.
    pub name: String,
    /// When the run ended (Unix ms; the final name's date).
    pub finished_at: i64,
    /// When it started (Unix ms; tells this daemon's archive from another's).
    pub started_at: i64,
    /// The run folder (logs, manifest.json).
    pub run_dir: PathBuf,
    /// The output folder, if the run had one.
    pub output: Option<PathBuf>,
    /// Its output manifest.
    pub outputs: Option<OutputManifest>,
    /// The archive root.
    pub root: PathBuf,
    /// Tries before this one.
    pub attempts: u32,
    /// The task's owner (whose output folder is read as theirs).
    pub owner: Option<nightjar_core::task::model::Owner>,
}

/// Queues run `run`'s archive under `root`, due now; in the run's end transaction.
pub(super) fn enqueue(tx: &Transaction<'_>, run: i64, root: &Path, now: i64) -> Result<()> {
    exec(
        tx,
        "INSERT OR IGNORE INTO archives (run_id, root, state, next_at, created_at)
         VALUES (?1, ?2, 'pending', ?3, ?3)",
        params![run, root.to_string_lossy(), now],
    )?;
    Ok(())
}

/// Stores run `run`'s output manifest; in the run's end transaction.
pub(super) fn set_outputs(tx: &Transaction<'_>, run: i64, m: &OutputManifest) -> Result<()> {
    exec(
        tx,
        "UPDATE runs SET outputs = ?2 WHERE id = ?1",
        params![run, serde_json::to_string(m)?],
    )?;
    Ok(())
}

fn view(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, ArchiveView)> {
    let state: String = r.get(2)?;
    let failure: Option<String> = r.get(6)?;
    let done = state == "done";
    Ok((
        r.get(0)?,
        ArchiveView {
            root: PathBuf::from(r.get::<_, String>(1)?),
            state: ArchiveState::parse(&state).unwrap_or(ArchiveState::Pending),
            attempts: r.get(3)?,
            next_at: if done { None } else { Some(r.get(4)?) },
            path: r.get::<_, Option<String>>(5)?.map(PathBuf::from),
            failure: failure.as_deref().and_then(ArchiveFailure::parse),
            error: r.get(7)?,
            done_at: r.get(8)?,
        },
    ))
}

const VIEW_COLUMNS: &str =
    "a.run_id, a.root, a.state, a.attempts, a.next_at, a.path, a.failure, a.error, a.done_at";

impl Store {
    /// The archives of task `task`'s runs, by run.
    pub fn archives_of_task(&self, task: i64) -> Result<HashMap<i64, ArchiveView>> {
        let sql = format!(
            "SELECT {VIEW_COLUMNS} FROM archives a JOIN runs r ON r.id = a.run_id WHERE r.task_id = ?1"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map([task], view)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Run `run`'s archive, if it has one.
    pub fn archive_of_run(&self, run: i64) -> Result<Option<ArchiveView>> {
        let sql = format!("SELECT {VIEW_COLUMNS} FROM archives a WHERE a.run_id = ?1");
        Ok(self
            .conn
            .query_row(&sql, [run], view)
            .optional()?
            .map(|(_, v)| v))
    }

    /// Archives due at `now`, oldest due first, at most `limit`.
    pub fn due_archives(&self, now: i64, limit: usize) -> Result<Vec<ArchiveJob>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT a.run_id, r.task_id, t.spec, r.finished_at, r.started_at, r.run_dir, r.output,
                    r.outputs, a.root, a.attempts
             FROM archives a INDEXED BY archives_due
             JOIN runs r ON r.id = a.run_id JOIN tasks t ON t.id = r.task_id
             WHERE a.state = 'pending' AND a.next_at <= ?1
             ORDER BY a.next_at, a.run_id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![now, limit as i64], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<i64>>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, Option<String>>(7)?,
                r.get::<_, String>(8)?,
                r.get::<_, u32>(9)?,
            ))
        })?;
        let mut jobs = Vec::new();
        for row in rows {
            let (run, task, spec, finished, started, run_dir, output, outputs, root, attempts) =
                row?;
            let spec: TaskSpec = serde_json::from_str(&spec)?;
            jobs.push(ArchiveJob {
                run,
                task,
                owner: spec.owner,
                project: spec.project,
                name: spec.name,
                finished_at: finished.unwrap_or(started),
                started_at: started,
                run_dir: run_dir.into(),
                output: output.map(PathBuf::from),
                outputs: outputs.and_then(|j| serde_json::from_str(&j).ok()),
                root: root.into(),
                attempts,
            });
        }
        Ok(jobs)
    }

    /// When the next pending archive is due (Unix ms).
    pub fn next_archive_due(&self) -> Result<Option<i64>> {
        Ok(self.conn.query_row(
            "SELECT MIN(next_at) FROM archives INDEXED BY archives_due WHERE state = 'pending'",
            [],
            |r| r.get(0),
        )?)
    }

    /// Records run `run`'s archive as verified under `path` (its final folder).
    pub fn archive_done(&mut self, run: i64, task: i64, path: &Path, now: i64) -> Result<()> {
        let tx = self.conn.transaction()?;
        exec(
            &tx,
            "UPDATE archives SET state = 'done', path = ?2, done_at = ?3, attempts = attempts + 1,
                    failure = NULL, error = NULL
             WHERE run_id = ?1",
            params![run, path.to_string_lossy(), now],
        )?;
        super::event(
            &tx,
            now,
            Some(task),
            Some(run),
            "archived",
            &format!("run {run} archived to {}", path.display()),
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Records a failed try of run `run`'s archive; the next is due at `next_at`.
    pub fn archive_failed(
        &mut self,
        run: i64,
        task: i64,
        failure: ArchiveFailure,
        error: &str,
        next_at: i64,
        now: i64,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        let before: Option<u32> = tx
            .query_row(
                "SELECT attempts FROM archives WHERE run_id = ?1 AND state = 'pending'",
                [run],
                |r| r.get(0),
            )
            .optional()?;
        let Some(before) = before else {
            return Ok(()); // verified meanwhile, or collected
        };
        exec(
            &tx,
            "UPDATE archives SET attempts = attempts + 1, failure = ?2, error = ?3, next_at = ?4
             WHERE run_id = ?1",
            params![run, failure.as_str(), error, next_at],
        )?;
        let next = chrono::DateTime::from_timestamp_millis(next_at).map_or_else(String::new, |t| {
            t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
        });
        if before == 0 {
            // Notifiers hear of the first failure only (retries may go on for hours).
            let spec: String =
                tx.query_row("SELECT spec FROM tasks WHERE id = ?1", [task], |r| r.get(0))?;
            let spec: TaskSpec = serde_json::from_str(&spec)?;
            super::outbox::outbox(
                &tx,
                now,
                "archive-failed",
                super::outbox::Severity::Warning,
                Some(task),
                Some(run),
                Some(&spec.project),
                serde_json::json!({
                    "name": spec.name,
                    "hint": format!("archive {}: {error}", failure.as_str()),
                    "reason": format!(
                        "retried on a schedule (next at {next}); the local outputs are kept until an archive is verified"
                    ),
                }),
            )?;
        }
        super::event(
            &tx,
            now,
            Some(task),
            Some(run),
            "archive-failed",
            &format!(
                "archive of run {run} failed ({}): {error}; next try at {next}; the local outputs are kept",
                failure.as_str()
            ),
        )?;
        tx.commit()?;
        Ok(())
    }
}
