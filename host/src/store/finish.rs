//! Recording a run's end, and what its task does next (the rules are
//! `postrun::retry`): one transaction with the run's class, its validators'
//! findings and the task's new state.

use std::path::{Path, PathBuf};

use rusqlite::params;

use super::queue::{CANCEL, Finished, PREEMPT, describe};
use super::{Result, RunOutcome, Store, TaskState, event, exec, row};
use crate::postrun::retry::{self, Ended, Next, Stop};
use crate::task::model::TaskSpec;
use nightjar_core::api::findings::Finding;
use nightjar_core::api::outputs::OutputManifest;

/// Everything recorded with a run's end.
#[derive(Debug, Clone, Copy)]
pub struct RunEnd<'a> {
    /// How it ended (after validation).
    pub outcome: &'a RunOutcome,
    /// What its validators found.
    pub findings: &'a [Finding],
    /// The most GPU memory it used on one GPU, when monitored.
    pub gpu_peak: Option<u64>,
    /// The file systems it writes to, watched if it ended disk-full.
    pub disks: &'a [PathBuf],
    /// The room a disk-full task is held for.
    pub disk_free: u64,
    /// Its output manifest, hashed after validation.
    pub outputs: Option<&'a OutputManifest>,
    /// Where a succeeded run is archived (its project's `[archive]` root).
    pub archive_root: Option<&'a Path>,
}

impl<'a> RunEnd<'a> {
    /// An end known only by its outcome.
    pub fn of(outcome: &'a RunOutcome) -> RunEnd<'a> {
        RunEnd {
            outcome,
            findings: &[],
            gpu_peak: None,
            disks: &[],
            disk_free: 0,
            outputs: None,
            archive_root: None,
        }
    }
}

/// What judging a run's end needs to know of it.
#[derive(Debug, Clone)]
pub struct EndContext {
    /// The task.
    pub task: i64,
    /// Its attempt.
    pub attempt: u32,
    /// Still running in the store (not recorded yet).
    pub running: bool,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// The run's folder.
    pub run_dir: PathBuf,
    /// The output folder the daemon gave it, if any.
    pub output: Option<PathBuf>,
    /// The task's spec.
    pub spec: TaskSpec,
}

impl Store {
    /// Remembers the output folder the daemon gave a run.
    pub fn set_run_output(&self, run: i64, output: &std::path::Path) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE runs SET output = ?2 WHERE id = ?1",
            params![run, output.to_string_lossy()],
        )?;
        Ok(())
    }

    /// Moves running run `run`'s start later, to `at` (Unix ms): a batch
    /// system's job that waited before its task began, so the wait is not
    /// counted as run time. Never earlier, and never once the run ended.
    pub fn set_run_began(&self, run: i64, at: i64) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE runs SET started_at = ?2 WHERE id = ?1 AND state = 'running' AND started_at < ?2",
            params![run, at],
        )?;
        Ok(())
    }

    /// What judging run `run`'s end needs.
    pub fn end_context(&self, run: i64) -> Result<EndContext> {
        let (task, attempt, state, started_at, run_dir, output, spec): (
            i64,
            u32,
            String,
            i64,
            String,
            Option<String>,
            String,
        ) = row(
            &self.conn,
            "SELECT r.task_id, r.attempt, r.state, r.started_at, r.run_dir, r.output, t.spec
             FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = ?1",
            [run],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            },
        )?;
        Ok(EndContext {
            task,
            attempt,
            running: state == "running",
            started_at,
            run_dir: run_dir.into(),
            output: output.map(PathBuf::from),
            spec: serde_json::from_str(&spec)?,
        })
    }

    /// Records how a run ended (see [`Store::end_run`]).
    pub fn finish_run(&mut self, run: i64, out: &RunOutcome) -> Result<Option<Finished>> {
        self.end_run(run, &RunEnd::of(out))
    }

    /// Records how a run ended and moves its task on: succeeded, cancelled,
    /// queued again (at once after a preemption, after the backoff for a
    /// class its `retry.on` lists), held for disk room, or failed. A failure
    /// blocks the task's after-ok dependants. Recording twice is a no-op.
    pub fn end_run(&mut self, run: i64, end: &RunEnd<'_>) -> Result<Option<Finished>> {
        let out = end.outcome;
        let findings = if end.findings.is_empty() {
            None
        } else {
            Some(serde_json::to_string(end.findings)?)
        };
        let tx = self.conn.transaction()?;
        let changed = exec(
            &tx,
            "UPDATE runs SET state = 'finished', finished_at = ?2, exit_code = ?3, signal = ?4,
                    class = ?5, message = ?6, findings = ?7
             WHERE id = ?1 AND state = 'running'",
            params![
                run,
                out.finished_at,
                out.exit_code,
                out.signal,
                out.class.as_str(),
                out.message,
                findings
            ],
        )?;
        if changed == 0 {
            return Ok(None);
        }
        if let Some(m) = end.outputs {
            super::archive::set_outputs(&tx, run, m)?;
        }
        if let Some(root) = end
            .archive_root
            .filter(|_| out.class == super::RunClass::Ok)
        {
            super::archive::enqueue(&tx, run, root, out.finished_at)?;
        }
        #[allow(clippy::type_complexity)]
        let (task, spec, attempts, cancel, started_at, eligible_at, gpus): (
            i64,
            String,
            u32,
            i64,
            i64,
            i64,
            Option<String>,
        ) = row(
            &tx,
            "SELECT t.id, t.spec, t.attempts, t.cancel_requested, r.started_at, r.eligible_at, r.gpus
             FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = ?1",
            [run],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            },
        )?;
        let spec: TaskSpec = serde_json::from_str(&spec)?;
        let told = super::outbox::RunTold {
            task,
            run,
            spec: &spec,
            out,
            started_at,
            waited_ms: started_at - eligible_at,
            gpus: gpus.filter(|g| !g.is_empty()),
            gpu_peak: end.gpu_peak,
            findings: end.findings.len(),
        };
        let disk_full_runs = if out.class == super::RunClass::DiskFull {
            disk_full_in_a_row(&tx, task)?
        } else {
            0
        };
        let what = describe(out);
        let now = out.finished_at;
        let stop = match cancel {
            CANCEL => Stop::Cancel,
            PREEMPT => Stop::Preempt,
            _ => Stop::None,
        };
        let next = retry::next(&Ended {
            task,
            class: out.class,
            stop,
            attempts,
            retry: &spec.retry,
            gpu_peak: end.gpu_peak,
            disks: end.disks,
            disk_free: end.disk_free,
            disk_full_runs,
        });
        let (state, reason) = match next {
            Next::Requeued => {
                // Stopped for a policy: queued again, and the attempt does not count.
                // What ended it stays said when it was not the supervisor
                // (a stopped one: the daemon killed the tree).
                let said = out
                    .message
                    .as_deref()
                    .filter(|m| m.contains("the daemon killed"))
                    .map(|m| format!("stopped by a policy and queued again; {m}"))
                    .unwrap_or_else(|| "stopped by a policy and queued again".into());
                tx.execute(
                    "UPDATE runs SET class = 'preempted', message = ?2 WHERE id = ?1",
                    rusqlite::params![run, said],
                )?;
                exec(
                    &tx,
                    "UPDATE tasks SET state = 'queued', reason = 'preempted by a policy; queued again',
                            attempts = MAX(attempts - 1, 0), cancel_requested = 0 WHERE id = ?1",
                    [task],
                )?;
                event(
                    &tx,
                    now,
                    Some(task),
                    Some(run),
                    "preempted",
                    "stopped by a policy and queued again",
                )?;
                told.tell(
                    &tx,
                    "task-preempted",
                    "stopped by a policy and queued again",
                )?;
                tx.commit()?;
                return Ok(Some(Finished {
                    state: TaskState::Queued,
                    reason: Some("preempted".into()),
                }));
            }
            Next::HoldForDisk(wait) => {
                let reason = format!(
                    "held after {what}; released when {} {} {} free (or by `nightjar release {task}`)",
                    wait.paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" and "),
                    if wait.paths.len() == 1 { "has" } else { "have" },
                    bytesize::ByteSize::b(wait.free).display().iec_short()
                );
                exec(
                    &tx,
                    "UPDATE tasks SET state = 'held', reason = ?2, held_for_disk = ?3,
                            attempts = MAX(attempts - 1, 0), cancel_requested = 0 WHERE id = ?1",
                    params![task, reason, serde_json::to_string(&wait)?],
                )?;
                event(&tx, now, Some(task), Some(run), "finished", &what)?;
                event(&tx, now, Some(task), Some(run), "held", &reason)?;
                told.tell(&tx, "task-held", &reason)?;
                tx.commit()?;
                return Ok(Some(Finished {
                    state: TaskState::Held,
                    reason: Some(reason),
                }));
            }
            Next::Retry {
                delay_ms,
                attempt,
                of,
                needs_gpu_free,
            } => {
                let on_gpu = needs_gpu_free
                    .map(|b| {
                        format!(
                            ", on a GPU with more than {} free (its peak)",
                            bytesize::ByteSize::b(b).display().iec_short()
                        )
                    })
                    .unwrap_or_default();
                // The time left is added when the reason is shown (`why.rs`):
                // a stored "in 5.0s" would say so for ever.
                let reason = format!("retrying after {what} (attempt {attempt} of {of}{on_gpu})");
                exec(
                    &tx,
                    "UPDATE tasks SET state = 'queued', reason = ?2, not_before = ?3,
                            needs_gpu_free = ?4, cancel_requested = 0 WHERE id = ?1",
                    params![
                        task,
                        reason,
                        now + delay_ms,
                        needs_gpu_free.map(|b| b as i64)
                    ],
                )?;
                event(&tx, now, Some(task), Some(run), "finished", &what)?;
                told.tell(&tx, "task-retried", &reason)?;
                tx.commit()?;
                return Ok(Some(Finished {
                    state: TaskState::Queued,
                    reason: Some(reason),
                }));
            }
            Next::Succeeded => (TaskState::Succeeded, None),
            Next::Cancelled => (TaskState::Cancelled, Some("cancelled by user".to_string())),
            Next::Failed(why) if why.is_empty() => (TaskState::Failed, Some(what.clone())),
            Next::Failed(why) => (TaskState::Failed, Some(format!("{what}; {why}"))),
        };
        exec(
            &tx,
            "UPDATE tasks SET state = ?2, reason = ?3, not_before = NULL, finished_at = ?4,
                    needs_gpu_free = NULL, cancel_requested = 0 WHERE id = ?1",
            params![task, state.as_str(), reason, now],
        )?;
        event(&tx, now, Some(task), Some(run), "finished", &what)?;
        let kind = match state {
            TaskState::Succeeded => "task-succeeded",
            TaskState::Cancelled => "task-cancelled",
            _ if out.class == super::RunClass::ValidationFailed => "task-validation-failed",
            _ => "task-failed",
        };
        told.tell(&tx, kind, reason.as_deref().unwrap_or(&what))?;
        if matches!(state, TaskState::Failed | TaskState::Cancelled) {
            super::deps::block_dependants_of(&tx, task, now)?;
        }
        tx.commit()?;
        Ok(Some(Finished { state, reason }))
    }
}

/// Task `task`'s finished runs that ended disk-full, counted back from its
/// newest until another class (at most [`retry::MAX_DISK_FULL_RUNS`]).
fn disk_full_in_a_row(tx: &rusqlite::Transaction<'_>, task: i64) -> Result<u32> {
    let mut stmt = tx.prepare_cached(
        "SELECT class FROM runs WHERE task_id = ?1 AND state = 'finished' ORDER BY id DESC LIMIT ?2",
    )?;
    let classes = stmt
        .query_map(params![task, retry::MAX_DISK_FULL_RUNS], |r| {
            r.get::<_, Option<String>>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(classes
        .iter()
        .take_while(|c| c.as_deref() == Some(super::RunClass::DiskFull.as_str()))
        .count() as u32)
}

#[cfg(test)]
#[path = "finish_tests.rs"]
mod tests;
