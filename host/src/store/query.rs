//! Read-only views: `ls`, `show`, and the states `wait` watches.

use rusqlite::{OptionalExtension, params};

use super::queue::{RUN_COLUMNS, run_row};
use super::{
    Counts, DepRow, EventRow, Result, ScheduleInfo, Store, StoreError, TaskDetail, TaskKind,
    TaskRow, TaskState, row,
};
use crate::task::model::{DepKind, Priority, TaskSpec};

pub(super) const TASK_COLUMNS: &str =
    "t.id, t.kind, t.parent_id, t.name, t.project, t.priority, t.state, t.reason,
    t.submitted_at, t.eligible_at, t.finished_at, t.attempts, t.next_fire_at, t.spec,
    (SELECT json_array(MAX(CASE WHEN r.state = 'running' THEN r.stalled_at END),
                       SUM(r.energy_j), SUM(r.cost), MAX(r.currency))
       FROM runs r WHERE r.task_id = t.id),
    t.owner, t.owner_uid, t.not_before";

/// What a task's runs add to its row, from one lookup of its runs (one
/// JSON array: a listing of 10,000 rows made four lookups each before).
type RunTotals = (Option<i64>, Option<f64>, Option<f64>, Option<String>);

pub(super) fn task_row(r: &rusqlite::Row) -> rusqlite::Result<TaskRow> {
    let id: i64 = r.get(0)?;
    read_task_row(r).map_err(|e| damaged_row("tasks", id, e))
}

/// A row that cannot be read, named: which table, which row, what to run.
pub(super) fn damaged_row(table: &str, id: i64, e: rusqlite::Error) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(
        format!(
            "table {table}, row id {id} cannot be read ({e}); stop the daemon and run `nightjar daemon check`"
        )
        .into(),
    )
}

/// The one field of a stored spec a task's row shows: decoding only it
/// skips the rest of the spec (a listing decodes one spec per row).
#[derive(serde::Deserialize)]
struct CommandOnly {
    command: crate::task::model::CommandSpec,
}

fn read_task_row(r: &rusqlite::Row) -> rusqlite::Result<TaskRow> {
    let kind: String = r.get(1)?;
    let kind = TaskKind::parse(&kind).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            1,
            rusqlite::types::Type::Text,
            format!("unknown kind `{kind}`").into(),
        )
    })?;
    let state: String = r.get(6)?;
    let spec: String = r.get(13)?;
    let command = serde_json::from_str::<CommandOnly>(&spec)
        .map(|s| s.command.display())
        .unwrap_or_default();
    let totals: String = r.get(14)?;
    let (stalled_at, energy_j, cost, currency): RunTotals =
        serde_json::from_str(&totals).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(14, rusqlite::types::Type::Text, e.into())
        })?;
    Ok(TaskRow {
        id: r.get(0)?,
        kind,
        parent_id: r.get(2)?,
        name: r.get(3)?,
        project: r.get(4)?,
        priority: Priority::from_rank(r.get(5)?).as_str().to_string(),
        state: TaskState::parse(&state).unwrap_or(TaskState::Failed),
        reason: r.get(7)?,
        submitted_at: r.get(8)?,
        eligible_at: r.get(9)?,
        finished_at: r.get(10)?,
        attempts: r.get(11)?,
        next_fire_at: r.get(12)?,
        command,
        counts: None,
        stalled_at,
        energy_j,
        cost,
        currency,
        owner: r.get(15)?,
        owner_uid: r.get(16)?,
        not_before: r.get(17)?,
    })
}

/// The name tasks stored without an owner go under: the daemon's user's.
pub(super) fn daemon_user() -> &'static String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| crate::users::name_of(crate::users::euid()))
}

impl Store {
    /// How many tasks of user `uid` wait (queued, held, blocked or
    /// scheduled; a sweep counts by its members). Tasks without an owner
    /// are the daemon's user's (`daemon_uid`).
    pub fn waiting_of(&self, uid: u32, daemon_uid: u32) -> Result<usize> {
        let n: i64 = row(
            &self.conn,
            "SELECT COUNT(*) FROM tasks
             WHERE kind != 'sweep' AND state IN ('queued', 'held', 'blocked', 'scheduled')
               AND (owner_uid = ?1 OR (?1 = ?2 AND owner_uid IS NULL))",
            params![uid, daemon_uid],
            |r| r.get(0),
        )?;
        Ok(n as usize)
    }

    /// Member counts of a sweep.
    pub fn counts(&self, sweep: i64) -> Result<Counts> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT state, COUNT(*) FROM tasks WHERE parent_id = ?1 GROUP BY state",
        )?;
        let mut c = Counts::default();
        for row in stmt.query_map([sweep], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?))
        })? {
            let (state, n) = row?;
            c.total += n;
            match TaskState::parse(&state) {
                Some(TaskState::Queued | TaskState::Held) => c.waiting += n,
                Some(TaskState::Running) => c.running += n,
                Some(TaskState::Succeeded) => c.succeeded += n,
                Some(TaskState::Failed) => c.failed += n,
                Some(TaskState::Blocked) => c.blocked += n,
                Some(TaskState::Cancelled) => c.cancelled += n,
                _ => {}
            }
        }
        Ok(c)
    }

    /// One task's row.
    pub fn task(&self, id: i64) -> Result<TaskRow> {
        let mut row = row(
            &self.conn,
            &format!("SELECT {TASK_COLUMNS} FROM tasks t WHERE t.id = ?1"),
            [id],
            task_row,
        )
        .optional()?
        .ok_or_else(|| {
            StoreError::NotFound(format!("no task with id {id}; `nightjar ls` lists them"))
        })?;
        if row.kind == TaskKind::Sweep {
            row.counts = Some(self.counts(id)?);
        }
        Ok(row)
    }

    /// A sweep's (or recurring template's) members and their states, by id.
    pub fn member_states(&self, parent: i64) -> Result<Vec<(i64, TaskState)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, state FROM tasks WHERE parent_id = ?1 ORDER BY id")?;
        let rows = stmt.query_map([parent], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, state) = row?;
            // As a task's row reads it (the schema's CHECK allows no other).
            out.push((id, TaskState::parse(&state).unwrap_or(TaskState::Failed)));
        }
        Ok(out)
    }

    /// Everything about one task.
    pub fn show(&self, id: i64) -> Result<TaskDetail> {
        let task = self.task(id)?;
        let spec: String = row(
            &self.conn,
            "SELECT spec FROM tasks WHERE id = ?1",
            [id],
            |r| r.get(0),
        )?;
        let spec: TaskSpec = serde_json::from_str(&spec)?;
        let deps = self
            .conn
            .prepare_cached(
                "SELECT d.dep_id, p.name, p.state, d.kind FROM deps d JOIN tasks p ON p.id = d.dep_id
                 WHERE d.task_id = ?1 ORDER BY d.dep_id",
            )?
            .query_map([id], |r| {
                let state: String = r.get(2)?;
                let kind: String = r.get(3)?;
                Ok(DepRow {
                    dep_id: r.get(0)?,
                    name: r.get(1)?,
                    state: TaskState::parse(&state).unwrap_or(TaskState::Failed),
                    kind: if kind == "after-any" { DepKind::AfterAny } else { DepKind::AfterOk },
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut runs = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE task_id = ?1 ORDER BY attempt"
            ))?
            .query_map([id], run_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut archives = self.archives_of_task(id)?;
        for run in &mut runs {
            run.outputs.archive = archives.remove(&run.id);
        }
        let members = self
            .conn
            .prepare_cached(&format!(
                "SELECT {TASK_COLUMNS} FROM tasks t WHERE t.parent_id = ?1 ORDER BY t.id"
            ))?
            .query_map([id], task_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let events = self
            .conn
            .prepare_cached(
                "SELECT at, run_id, kind, message FROM events WHERE task_id = ?1 ORDER BY id",
            )?
            .query_map([id], |r| {
                Ok(EventRow {
                    at: r.get(0)?,
                    run_id: r.get(1)?,
                    kind: r.get(2)?,
                    message: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let gpu_records = self.gpu_records(id)?;
        let schedule = row(
            &self.conn,
            "SELECT schedule FROM tasks WHERE id = ?1",
            [id],
            |r| r.get::<_, Option<String>>(0),
        )?
        .map(|expr| ScheduleInfo {
            expr,
            timezone: String::new(),
            next_there: None,
        });
        let mut manifests = self.manifests(id)?;
        if let Some(m) = &mut manifests.submit {
            m.command = spec.command.to_argv();
            m.env = spec.env.clone();
            m.spec = Some(spec.clone());
        }
        Ok(TaskDetail {
            task,
            spec,
            deps,
            runs,
            members,
            events,
            gpu_records,
            schedule,
            manifests,
            estimate: None,
        })
    }

    /// The latest run of a task, if it has one.
    pub fn latest_run(&self, task: i64) -> Result<Option<super::RunRow>> {
        Ok(row(
            &self.conn,
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE task_id = ?1 ORDER BY attempt DESC LIMIT 1"
            ),
            [task],
            run_row,
        )
        .optional()?)
    }

    /// The output folders of the runs in progress (each once).
    pub fn running_outputs(&self) -> Result<Vec<std::path::PathBuf>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT output FROM runs WHERE state = 'running' AND output IS NOT NULL ORDER BY output",
        )?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows.into_iter().map(std::path::PathBuf::from).collect())
    }
}
