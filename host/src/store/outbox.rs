//! The notification outbox: events written in the transaction of the state
//! change they tell of, each notifier's cursor in it (in order, one place
//! per notifier), the retry schedule of the event at its cursor, and the
//! dead letters it gave up on.

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::{Map, Value};

use super::{Result, Store, StoreError, exec, row};

/// How much an event weighs.
pub use nightjar_core::api::findings::Severity;

/// One event of the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEvent {
    /// Increasing id: the order things happened in.
    pub id: i64,
    /// When (Unix ms).
    pub at: i64,
    /// `task-failed`, `daemon-started`, ...
    pub kind: String,
    /// How much it weighs.
    pub severity: Severity,
    /// The task it is about.
    pub task: Option<i64>,
    /// The run it is about.
    pub run: Option<i64>,
    /// The task's project.
    pub project: Option<String>,
    /// Named facts (name, class, exit code, hint, ...).
    pub facts: Map<String, Value>,
}

/// A notifier's place in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifierState {
    /// Its name.
    pub name: String,
    /// The last event handled (delivered, not subscribed, or dead).
    pub cursor: i64,
    /// Failed tries of the events after the cursor.
    pub attempts: u32,
    /// When to try them again (Unix ms).
    pub next_at: Option<i64>,
    /// The last failure (redacted).
    pub last_error: Option<String>,
    /// Events delivered in all.
    pub delivered: i64,
}

/// A delivery given up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Its id (`nightjar notify retry ID`).
    pub id: i64,
    /// The notifier.
    pub notifier: String,
    /// The event.
    pub event_id: i64,
    /// When it was given up on.
    pub at: i64,
    /// Why.
    pub reason: String,
    /// `dead`, `requeued` or `delivered`.
    pub state: String,
}

/// Writes an event into the outbox, inside the caller's transaction.
#[allow(clippy::too_many_arguments)]
pub(super) fn outbox(
    tx: &Transaction,
    at: i64,
    kind: &str,
    severity: Severity,
    task: Option<i64>,
    run: Option<i64>,
    project: Option<&str>,
    facts: Value,
) -> Result<()> {
    exec(
        tx,
        "INSERT INTO outbox (at, kind, severity, task_id, run_id, project, facts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            at,
            kind,
            severity.as_str(),
            task,
            run,
            project,
            facts.to_string()
        ],
    )?;
    Ok(())
}

/// What an event about a run's end says: the task, the run, how it ended.
pub(super) struct RunTold<'a> {
    pub task: i64,
    pub run: i64,
    pub spec: &'a crate::task::model::TaskSpec,
    pub out: &'a super::RunOutcome,
    pub started_at: i64,
    /// How long it waited between eligible and started.
    pub waited_ms: i64,
    /// The GPUs it ran on (`0,1`).
    pub gpus: Option<String>,
    /// Its peak GPU memory (bytes), where monitored.
    pub gpu_peak: Option<u64>,
    pub findings: usize,
}

impl RunTold<'_> {
    /// Writes event `kind` (its severity follows from it) with `reason`,
    /// the task's new reason, into the outbox.
    pub fn tell(&self, tx: &Transaction, kind: &str, reason: &str) -> Result<()> {
        let severity = match kind {
            "task-failed" | "task-validation-failed" => Severity::Error,
            "task-retried" | "task-held" | "task-blocked" => Severity::Warning,
            _ => Severity::Info,
        };
        let o = self.out;
        outbox(
            tx,
            o.finished_at,
            kind,
            severity,
            Some(self.task),
            Some(self.run),
            Some(&self.spec.project),
            serde_json::json!({
                "name": self.spec.name,
                "class": o.class.as_str(),
                "exit_code": o.exit_code,
                "signal": o.signal,
                "hint": o.message,
                "reason": reason,
                "duration_ms": o.finished_at - self.started_at,
                "waited_ms": self.waited_ms.max(0),
                "gpus": self.gpus,
                "gpu_peak_bytes": self.gpu_peak,
                "findings": self.findings,
            }),
        )
    }
}

fn event_row(r: &rusqlite::Row) -> rusqlite::Result<OutboxEvent> {
    let severity: String = r.get(3)?;
    let facts: String = r.get(7)?;
    Ok(OutboxEvent {
        id: r.get(0)?,
        at: r.get(1)?,
        kind: r.get(2)?,
        severity: match severity.as_str() {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            _ => Severity::Info,
        },
        task: r.get(4)?,
        run: r.get(5)?,
        project: r.get(6)?,
        facts: serde_json::from_str(&facts).unwrap_or_default(),
    })
}

const EVENT_COLUMNS: &str = "id, at, kind, severity, task_id, run_id, project, facts";

impl Store {
    /// Writes an event of the daemon itself (started, stopped, a plugin
    /// disabled) in a transaction of its own.
    pub fn daemon_event(
        &mut self,
        at: i64,
        kind: &str,
        severity: Severity,
        facts: Value,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        outbox(&tx, at, kind, severity, None, None, None, facts)?;
        tx.commit()?;
        Ok(())
    }

    /// Makes sure each of `names` has a place in the outbox; a new notifier
    /// starts after the newest event (it is not sent the past). Notifiers no
    /// longer configured lose their place (so they hold no outbox event back
    /// from retention).
    pub fn register_notifiers(&mut self, names: &[String]) -> Result<()> {
        let tx = self.conn.transaction()?;
        exec(
            &tx,
            "DELETE FROM notifiers WHERE name NOT IN (SELECT value FROM json_each(?1))",
            [serde_json::to_string(names)?],
        )?;
        for name in names {
            exec(
                &tx,
                "INSERT OR IGNORE INTO notifiers (name, cursor)
                 VALUES (?1, (SELECT COALESCE(MAX(id), 0) FROM outbox))",
                [name],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// A notifier's place.
    pub fn notifier(&self, name: &str) -> Result<NotifierState> {
        row(
            &self.conn,
            "SELECT name, cursor, attempts, next_at, last_error, delivered FROM notifiers WHERE name = ?1",
            [name],
            |r| {
                Ok(NotifierState {
                    name: r.get(0)?,
                    cursor: r.get(1)?,
                    attempts: r.get(2)?,
                    next_at: r.get(3)?,
                    last_error: r.get(4)?,
                    delivered: r.get(5)?,
                })
            },
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("no notifier named `{name}`")))
    }

    /// Up to `limit` events after `cursor`, oldest first.
    pub fn events_after(&self, cursor: i64, limit: usize) -> Result<Vec<OutboxEvent>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM outbox WHERE id > ?1 ORDER BY id LIMIT ?2"
        ))?;
        let rows = stmt
            .query_map(params![cursor, limit as i64], event_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The event with this id.
    pub fn outbox_event(&self, id: i64) -> Result<Option<OutboxEvent>> {
        Ok(row(
            &self.conn,
            &format!("SELECT {EVENT_COLUMNS} FROM outbox WHERE id = ?1"),
            [id],
            event_row,
        )
        .optional()?)
    }

    /// Events after the cursor not yet handled.
    pub fn pending_count(&self, cursor: i64) -> Result<i64> {
        Ok(row(
            &self.conn,
            "SELECT COUNT(*) FROM outbox WHERE id > ?1",
            [cursor],
            |r| r.get(0),
        )?)
    }

    /// Moves a notifier past `upto`: delivered (`delivered` of them counted)
    /// or skipped; its failure count starts again.
    pub fn advance(&mut self, name: &str, upto: i64, delivered: usize) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE notifiers SET cursor = MAX(cursor, ?2), attempts = 0, next_at = NULL,
                    last_error = NULL, delivered = delivered + ?3 WHERE name = ?1",
            params![name, upto, delivered as i64],
        )?;
        Ok(())
    }

    /// Records a failed try; the events wait until `next_at`.
    pub fn delivery_failed(&mut self, name: &str, next_at: i64, error: &str) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE notifiers SET attempts = attempts + 1, next_at = ?2, last_error = ?3 WHERE name = ?1",
            params![name, next_at, error],
        )?;
        Ok(())
    }

    /// Gives up on `events` for a notifier: each becomes a dead letter with
    /// `reason`, and the notifier moves past them, in one transaction.
    pub fn bury(&mut self, name: &str, events: &[i64], at: i64, reason: &str) -> Result<()> {
        let tx = self.conn.transaction()?;
        for e in events {
            exec(
                &tx,
                "INSERT INTO dead_letters (notifier, event_id, at, reason) VALUES (?1, ?2, ?3, ?4)",
                params![name, e, at, reason],
            )?;
        }
        if let Some(last) = events.iter().max() {
            exec(
                &tx,
                "UPDATE notifiers SET cursor = MAX(cursor, ?2), attempts = 0, next_at = NULL,
                        last_error = ?3 WHERE name = ?1",
                params![name, last, reason],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Dead letters, newest first (at most `limit`).
    pub fn dead_letters(&self, limit: usize) -> Result<Vec<DeadLetter>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, notifier, event_id, at, reason, state FROM dead_letters
             ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = stmt
            .query_map([limit as i64], |r| {
                Ok(DeadLetter {
                    id: r.get(0)?,
                    notifier: r.get(1)?,
                    event_id: r.get(2)?,
                    at: r.get(3)?,
                    reason: r.get(4)?,
                    state: r.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The notifier of dead letter `id`, if there is one.
    pub fn dead_letter_notifier(&self, id: i64) -> Result<Option<String>> {
        Ok(row(
            &self.conn,
            "SELECT notifier FROM dead_letters WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()?)
    }

    /// The oldest requeued dead letter of a notifier, if any.
    pub fn requeued(&self, name: &str) -> Result<Option<(i64, i64)>> {
        Ok(row(
            &self.conn,
            "SELECT id, event_id FROM dead_letters WHERE notifier = ?1 AND state = 'requeued'
             ORDER BY id LIMIT 1",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
    }

    /// Sets a dead letter's state (`requeued` by `notify retry`, `delivered`
    /// or `dead` again by the worker).
    pub fn set_dead_letter(&mut self, id: i64, state: &str, reason: Option<&str>) -> Result<usize> {
        let from = if state == "requeued" {
            "dead"
        } else {
            "requeued"
        };
        let n = exec(
            &self.conn,
            "UPDATE dead_letters SET state = ?2, reason = COALESCE(?4, reason)
             WHERE id = ?1 AND state = ?3",
            params![id, state, from, reason],
        )?;
        if n == 0 && state == "requeued" {
            return Err(StoreError::Invalid(format!(
                "dead letter {id} does not exist or is not dead (see `nightjar notify ls`)"
            )));
        }
        Ok(n)
    }
}
