//! Re-adopting runs at a daemon's start: each run the store has as running
//! is asked of its executor (a batch system keeps its jobs) or probed as a
//! local run (its supervisor's lock and pid): held again while alive,
//! recorded when it ended meanwhile, given back when it never started.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

use super::Held;
use super::executor::Adopted;
use crate::daemon::state::{Daemon, lock};
use crate::sandbox::files;
use crate::sandbox::launch::Liveness;
use crate::sandbox::liveness::{self, RunIds};
use crate::scheduler::Placement;
use crate::store::RunRow;
use crate::time::now_ms;

impl Daemon {
    /// At start: re-adopt live runs, record finished ones, mark vanished ones lost.
    pub fn adopt(self: &Arc<Self>) -> Result<()> {
        // The last starts on each GPU, so a restart does not start ten at once.
        let stagger = self.cfg.gpu.stagger.as_millis() as i64;
        if stagger > 0 {
            let now = self.now_ms();
            let starts = self.store().gpu_starts_since(now.saturating_sub(stagger))?;
            let mut pool = lock(&self.pool);
            pool.stagger.now = now;
            for (task, gpus, at) in starts {
                pool.stagger.started(&gpus, task, at);
            }
        }
        let runs = self.store().running_runs()?;
        if let Ok(base) = &self.runs.cgroup {
            let live: Vec<i64> = runs.iter().map(|r| r.id).collect();
            crate::sandbox::cgroup::sweep(&base.dir, &live);
        }
        for run in runs {
            let dir = PathBuf::from(&run.run_dir);
            let executor = Arc::clone(&self.runs.executor);
            let found = match executor.adopt(self, &run)? {
                Adopted::Local => {
                    let ids = RunIds {
                        supervisor: run.supervisor_pid.map(|p| p as i32),
                        ..self.run_ids(run.id, &dir)
                    };
                    liveness::probe(&self.cfg.run_lock_path(), &ids)?
                }
                Adopted::Live(session, job) => {
                    // A job the last daemon submitted but could not record.
                    let note = match (run.sandbox_note.as_deref(), job) {
                        (Some(n), Some(j)) => Some(format!("{n}; {j}")),
                        (n, j) => n.map(str::to_string).or(j),
                    };
                    if run.supervisor_pid != Some(i64::from(session))
                        && let Err(e) =
                            self.store()
                                .set_run_started(run.id, session, note.as_deref())
                    {
                        tracing::warn!("run {}: cannot record its session {session}: {e}", run.id);
                    }
                    self.hold_adopted(&run, session, dir)?;
                    continue;
                }
                Adopted::Ended(out) => {
                    tracing::info!(
                        "run {} of task {}: ended while the daemon was away",
                        run.id,
                        run.task_id
                    );
                    self.finish(run.id, &out);
                    continue;
                }
                Adopted::NeverStarted => {
                    tracing::warn!(
                        "run {} of task {}: never started (its executor has no trace of it); given back to the queue",
                        run.id,
                        run.task_id
                    );
                    self.give_back(run.id);
                    continue;
                }
            };
            match found {
                Liveness::Alive => {
                    self.hold_adopted(&run, run.supervisor_pid.unwrap_or(0) as u32, dir.clone())?;
                    let me = Arc::clone(self);
                    let lock = self.cfg.run_lock_path();
                    tokio::spawn(async move {
                        let id = run.id;
                        let _ = tokio::task::spawn_blocking(move || {
                            crate::sandbox::lock::wait_unlocked(&lock, id)
                        })
                        .await;
                        me.record_until_done(run.id, dir).await;
                    });
                }
                Liveness::Ended(status) => {
                    tracing::info!(
                        "run {} of task {}: ended while the daemon was away",
                        run.id,
                        run.task_id
                    );
                    // Validated now if it exited 0: a daemon killed while
                    // judging a run judges it again (validators are pure).
                    self.finish(run.id, &status.outcome());
                }
                Liveness::Vanished(_) if !files::was_started(&dir) => {
                    tracing::warn!(
                        "run {} of task {}: never started (no supervisor reached it); given back to the queue",
                        run.id,
                        run.task_id
                    );
                    self.give_back(run.id);
                }
                Liveness::Vanished(status) => {
                    tracing::warn!(
                        "run {} of task {}: lost (no supervisor, no status)",
                        run.id,
                        run.task_id
                    );
                    self.finish(run.id, &status.outcome());
                }
            }
        }
        Ok(())
    }

    /// Holds adopted run `run` (session `session`) as one in progress: its
    /// GPUs and cores taken, and, for a local run, what is left of its
    /// timeout as the daemon's deadline.
    fn hold_adopted(&self, run: &RunRow, session: u32, dir: PathBuf) -> Result<()> {
        let spec = self.store().show(run.task_id)?.spec;
        let placement = placement_of(run, &spec.resources, self.cfg.gpu.share);
        lock(&self.pool).take_adopted(&placement);
        let local = self.runs.executor.local();
        let held = Held {
            task: run.task_id,
            placement,
            session,
            dir,
            owner: self.access.owner_uid(spec.owner.as_ref().map(|o| o.uid)),
            started_at: run.started_at,
            estimate: self.estimate(&spec).map(|e| e.ms),
            // What is left of its timeout, by the wall clock it started on.
            deadline: spec.resources.timeout.filter(|_| local).map(|t| {
                let ran = now_ms().saturating_sub(run.started_at).max(0) as u64;
                let started = std::time::Instant::now()
                    .checked_sub(std::time::Duration::from_millis(ran).min(t))
                    .unwrap_or_else(std::time::Instant::now);
                crate::daemon::run::watchdog::Deadline::timeout(started, t, self.cfg.sandbox.grace)
            }),
            cancel_asked: false,
        };
        lock(&self.runs.placed).insert(run.id, held);
        tracing::info!("run {} of task {}: re-adopted", run.id, run.task_id);
        // Cancelled before the last daemon knew its session (a job whose
        // sbatch it was killed in): nothing stopped it yet. Stopping one
        // already stopping again is harmless (its supervisor keeps its
        // first grace).
        if self.store().cancel_requested(run.task_id).unwrap_or(false) {
            tracing::info!("run {}: its task was cancelled; stopping it", run.id);
            self.cancel_run(run.id, Some(i64::from(session)));
        }
        Ok(())
    }
}

/// What an adopted run holds, rebuilt from its row and its task's resources.
fn placement_of(run: &RunRow, res: &crate::task::model::Resources, share: bool) -> Placement {
    let parse = |s: &Option<String>| -> Vec<u32> {
        s.as_deref()
            .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_default()
    };
    let gpus = parse(&run.gpus);
    let gpu_mem = res.gpu_mem.map(|m| m.as_u64()).filter(|_| !gpus.is_empty());
    Placement {
        exclusive: !gpus.is_empty() && (gpu_mem.is_none() || !share),
        uuids: Vec::new(),
        gpu_mem,
        gpus,
        cpus: parse(&run.cpus),
    }
}
