//! The queue's transitions: which tasks may start, claiming one, recording
//! how a run ended, firing recurring templates (blocking and unblocking
//! dependants is in deps.rs).

use rusqlite::{OptionalExtension, params};

use super::{Result, RunClass, RunOutcome, RunRow, Store, StoreError, TaskState, event, exec, row};
use crate::task::model::TaskSpec;

/// `tasks.cancel_requested`: a user cancel.
pub(super) const CANCEL: i64 = 1;
/// `tasks.cancel_requested`: a policy's preemption.
pub(super) const PREEMPT: i64 = 2;

/// What a claimed run records at its start.
#[derive(Debug, Clone, Default)]
pub struct NewRun {
    /// GPU indices given, comma-separated.
    pub gpus: Option<String>,
    /// Cores pinned to, comma-separated.
    pub cpus: Option<String>,
    /// Why it starts now (its score by policy), recorded as a `placed` event
    /// in the same transaction.
    pub because: Option<String>,
}

/// What became of a task when its run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The task's new state.
    pub state: TaskState,
    /// The reason stored with it.
    pub reason: Option<String>,
}

pub(super) const RUN_COLUMNS: &str =
    "id, task_id, attempt, state, run_dir, supervisor_pid, submitted_at, eligible_at,
    started_at, finished_at, exit_code, signal, class, message, gpus, cpus, sandbox_note, stalled_at,
    findings, checkpoint, outputs, outputs_removed_at, energy_j, energy_source, cost, currency,
    seed, cached_from";

/// Reads a run row selected with [`RUN_COLUMNS`].
pub(super) fn run_row(r: &rusqlite::Row) -> rusqlite::Result<RunRow> {
    let class: Option<String> = r.get(12)?;
    Ok(RunRow {
        id: r.get(0)?,
        task_id: r.get(1)?,
        attempt: r.get(2)?,
        state: r.get(3)?,
        run_dir: r.get(4)?,
        supervisor_pid: r.get(5)?,
        submitted_at: r.get(6)?,
        eligible_at: r.get(7)?,
        started_at: r.get(8)?,
        finished_at: r.get(9)?,
        exit_code: r.get(10)?,
        signal: r.get(11)?,
        class: class.as_deref().and_then(RunClass::parse),
        message: r.get(13)?,
        gpus: r.get(14)?,
        cpus: r.get(15)?,
        sandbox_note: r.get(16)?,
        stalled_at: r.get(17)?,
        findings: r
            .get::<_, Option<String>>(18)?
            .and_then(|j| serde_json::from_str(&j).ok())
            .unwrap_or_default(),
        checkpoint: r.get(19)?,
        outputs: nightjar_core::api::outputs::RunOutputs {
            manifest: r
                .get::<_, Option<String>>(20)?
                .and_then(|j| serde_json::from_str(&j).ok()),
            archive: None,
            removed_at: r.get(21)?,
        },
        energy: match (
            r.get::<_, Option<f64>>(22)?,
            r.get::<_, Option<String>>(23)?,
        ) {
            (Some(energy_j), Some(source)) => Some(nightjar_core::api::wire::RunEnergy {
                energy_j,
                source,
                cost: r.get(24)?,
                currency: r.get(25)?,
            }),
            _ => None,
        },
        seed: r.get::<_, Option<i64>>(26)?.map(|s| s as u64),
        cached_from: r.get(27)?,
    })
}

/// Recurring templates due at `?1`. Runs on every pass: must use an index.
/// `INDEXED BY` pins the small partial index: without statistics SQLite
/// would pick the (state, ...) index and walk every queued task.
pub(super) const DUE_SQL: &str = "SELECT id, spec, schedule FROM tasks INDEXED BY tasks_fire
    WHERE state = 'scheduled' AND next_fire_at <= ?1";

/// Whether any template is due (`DUE_SQL` finds it).
pub(super) const DUE_ANY_SQL: &str = "SELECT EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_fire
    WHERE state = 'scheduled' AND next_fire_at <= ?1)";

/// `@reboot` templates: read once, at daemon start.
pub(super) const REBOOT_SQL: &str = "SELECT id, spec, schedule FROM tasks
    WHERE state = 'scheduled' AND kind = 'recurring' AND lower(trim(schedule)) = '@reboot'";

/// The scheduler's next timer after `?1`. Runs after every pass: must use
/// indexes. A backoff that has already ended is not a timer: the task waits
/// for a slot, and a run's end asks for the pass that starts it (a past
/// time here made the scheduler spin while every slot was taken).
pub(super) const WAKEUP_SQL: &str = "SELECT MIN(x) FROM (
    SELECT MIN(not_before) AS x FROM tasks INDEXED BY tasks_backoff
        WHERE state = 'queued' AND not_before IS NOT NULL AND not_before > ?1
    UNION ALL
    SELECT MIN(next_fire_at) FROM tasks INDEXED BY tasks_fire WHERE state = 'scheduled')";

impl Store {
    /// Claims a queued task for a new run, atomically: returns `None` when the
    /// task may no longer start (claimed, cancelled, held, or a dependency
    /// queued again by `retry` since the scheduler read it). The run folder
    /// is `runs_dir/<run id>`.
    pub fn claim(
        &mut self,
        task: i64,
        run: &NewRun,
        runs_dir: &std::path::Path,
        now: i64,
    ) -> Result<Option<RunRow>> {
        let tx = self.conn.transaction()?;
        // The scheduler read the queue before asking the policies (which may
        // take seconds) or from its last ranking: what it read is checked
        // again here, in the claim's own transaction.
        if !super::candidates::may_start(&tx, task, now)? {
            return Ok(None);
        }
        // Eligible since: submit, end of backoff, or the last dependency's end.
        let eligible: Option<i64> = row(&tx,
                "SELECT MAX(t.submitted_at, COALESCE(t.not_before, 0),
                        COALESCE((SELECT MAX(p.finished_at) FROM deps d JOIN tasks p ON p.id = d.dep_id
                                  WHERE d.task_id = t.id), 0))
                 FROM tasks t WHERE t.id = ?1",
                [task],
                |r| r.get(0),
            )
            .optional()?;
        let Some(eligible) = eligible else {
            return Ok(None);
        };
        let eligible = eligible.min(now);
        let changed = exec(&tx,
            "UPDATE tasks SET state = 'running', reason = NULL, attempts = attempts + 1, eligible_at = ?2
             WHERE id = ?1 AND state = 'queued'",
            params![task, eligible],
        )?;
        if changed == 0 {
            return Ok(None);
        }
        let (submitted, name, project): (i64, String, String) = row(
            &tx,
            "SELECT submitted_at, name, project FROM tasks WHERE id = ?1",
            [task],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let attempt: i64 = row(
            &tx,
            "SELECT COALESCE(MAX(attempt), 0) + 1 FROM runs WHERE task_id = ?1",
            [task],
            |r| r.get(0),
        )?;
        let run_id = super::marks::issue(&tx, super::marks::Issue::Run)?;
        exec(&tx,
            "INSERT INTO runs (id, task_id, attempt, state, run_dir, submitted_at, eligible_at, started_at, gpus, cpus)
             VALUES (?8, ?1, ?2, 'running', '', ?3, ?4, ?5, ?6, ?7)",
            params![task, attempt, submitted, eligible, now, run.gpus, run.cpus, run_id],
        )?;
        let dir = runs_dir.join(run_id.to_string());
        exec(
            &tx,
            "UPDATE runs SET run_dir = ?1 WHERE id = ?2",
            params![dir.to_string_lossy(), run_id],
        )?;
        event(
            &tx,
            now,
            Some(task),
            Some(run_id),
            "started",
            &format!("attempt {attempt}"),
        )?;
        if let Some(why) = &run.because {
            event(&tx, now, Some(task), None, "placed", why)?;
        }
        super::outbox::outbox(
            &tx,
            now,
            "task-started",
            super::outbox::Severity::Info,
            Some(task),
            Some(run_id),
            Some(&project),
            serde_json::json!({
                "name": name,
                "attempt": attempt,
                "gpus": run.gpus,
                "waited_ms": now - eligible,
            }),
        )?;
        let row = row(
            &tx,
            &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
            [run_id],
            run_row,
        )?;
        tx.commit()?;
        Ok(Some(row))
    }

    /// Records the supervisor of a started run, and what its sandbox enforces.
    pub fn set_run_started(&self, run: i64, pid: u32, note: Option<&str>) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE runs SET supervisor_pid = ?1, sandbox_note = ?2 WHERE id = ?3",
            params![pid, note, run],
        )?;
        Ok(())
    }

    /// Runs that were in progress: what the daemon adopts at start.
    pub fn running_runs(&self) -> Result<Vec<RunRow>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE state = 'running' ORDER BY id"
        ))?;
        let rows = stmt
            .query_map([], run_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Creates an instance of every recurring template due at `now` (once,
    /// however many firings were missed) and advances its next firing.
    pub fn fire_due(
        &mut self,
        now: i64,
        next_fire: impl Fn(&str, i64) -> Option<i64>,
    ) -> Result<Vec<i64>> {
        // Asked at every pass: most find nothing due, and a look through the
        // index outside a transaction costs no locking of the database.
        let any: bool = self
            .conn
            .prepare_cached(DUE_ANY_SQL)?
            .query_row([now], |r| r.get(0))?;
        if !any {
            return Ok(Vec::new());
        }
        let tx = self.conn.transaction()?;
        let due: Vec<(i64, String, String)> = {
            let mut stmt = tx.prepare_cached(DUE_SQL)?;
            stmt.query_map([now], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<_>>()?
        };
        let created = fire(&tx, due, now, &next_fire)?;
        tx.commit()?;
        Ok(created)
    }

    /// Fires every `@reboot` template once: called when the daemon starts.
    pub fn fire_reboot(&mut self, now: i64) -> Result<Vec<i64>> {
        let tx = self.conn.transaction()?;
        let due: Vec<(i64, String, String)> = {
            let mut stmt = tx.prepare_cached(REBOOT_SQL)?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<_>>()?
        };
        let created = fire(&tx, due, now, &|_: &str, _| None)?;
        tx.commit()?;
        Ok(created)
    }
}

/// Creates one instance of each template in `due` and sets its next firing.
fn fire(
    tx: &rusqlite::Transaction,
    due: Vec<(i64, String, String)>,
    now: i64,
    next_fire: &impl Fn(&str, i64) -> Option<i64>,
) -> Result<Vec<i64>> {
    let mut created = Vec::new();
    for (template, spec_json, schedule) in due {
        let spec: TaskSpec = serde_json::from_str(&spec_json)?;
        let id = super::marks::issue(tx, super::marks::Issue::Task)?;
        exec(tx,
                "INSERT INTO tasks (id, kind, parent_id, name, project, priority, state, spec, submitted_at,
                                    owner_uid, owner)
                 VALUES (?9, 'task', ?1, ?2, ?3, ?4, 'queued', ?5, ?6, ?7, ?8)",
                params![
                    template,
                    spec.name,
                    spec.project,
                    spec.priority.rank(),
                    spec_json,
                    now,
                    spec.owner.as_ref().map(|o| o.uid),
                    spec.owner.as_ref().map(|o| &o.name),
                    id,
                ],
            )?;
        created.push(id);
        let next = next_fire(&schedule, now);
        exec(
            tx,
            "UPDATE tasks SET next_fire_at = ?1 WHERE id = ?2",
            params![next, template],
        )?;
        event(
            tx,
            now,
            Some(template),
            None,
            "fired",
            &format!("created task {id}"),
        )?;
    }
    Ok(created)
}

impl Store {
    /// The earliest time something waits for: a backoff ending or a template firing.
    pub fn next_wakeup(&self, now: i64) -> Result<Option<i64>> {
        let t: Option<i64> = row(&self.conn, WAKEUP_SQL, [now], |r| r.get(0))?;
        Ok(t)
    }

    /// The run row with this id.
    pub fn run(&self, run: i64) -> Result<RunRow> {
        row(
            &self.conn,
            &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
            [run],
            run_row,
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("no run with id {run}")))
    }
}

/// A one-line description of a run's end.
pub fn describe(out: &RunOutcome) -> String {
    let base = match (out.class, out.exit_code, out.signal) {
        (RunClass::Ok, _, _) => "exit 0".to_string(),
        (RunClass::Timeout, _, _) => "timeout".to_string(),
        (RunClass::Cancelled, _, _) => "cancelled".to_string(),
        (RunClass::Lost, _, _) => {
            "lost (supervisor gone without a status; host reboot?)".to_string()
        }
        // A named failure leads with its class: `gpu-oom (exit 1)`.
        (
            c @ (RunClass::GpuOom
            | RunClass::HostOom
            | RunClass::DiskFull
            | RunClass::Network
            | RunClass::ValidationFailed),
            code,
            sig,
        ) => match (code, sig) {
            (Some(code), _) => format!("{} (exit {code})", c.as_str()),
            (_, Some(sig)) => format!("{} (signal {sig})", c.as_str()),
            _ => c.as_str().to_string(),
        },
        (_, Some(code), _) => format!("exit {code}"),
        (_, _, Some(sig)) => format!("killed by signal {sig}"),
        _ => out.class.as_str().to_string(),
    };
    match &out.message {
        Some(m) if !m.is_empty() => format!("{base}: {m}"),
        _ => base,
    }
}
