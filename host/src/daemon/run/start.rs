//! Starting one run: place it, claim it in the store, prepare its
//! environment and hand it to the executor (`executor.rs`), which carries
//! it out and reports its end.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

use super::Held;
use super::executor::{Launch, Started, TryLater};
use crate::daemon::run::runenv;
use crate::daemon::state::{Daemon, lock};
use crate::scheduler::Placement;
use crate::scheduler::backfill::{Decision, Easy};
use crate::store::{NewRun, RunClass, RunOutcome};

impl Daemon {
    /// Places one candidate if it fits and backfill lets it; true when it
    /// started. `because` (its score by policy) is recorded with the claim,
    /// with how it was backfilled when it was. A task that waits for a
    /// stagger or a reservation says so in `ls`, `show` and `why`.
    pub(in crate::daemon) fn try_start(
        self: &Arc<Self>,
        c: &crate::store::Candidate,
        because: Option<String>,
        easy: &mut Easy,
    ) -> bool {
        if self.complete_from_cache(c) {
            return true;
        }
        // A batch system that keeps as many waiting jobs as it may.
        if let Some(why) = self.runs.executor.busy() {
            lock(&self.pipeline.place_reasons).insert(c.id, why);
            return false;
        }
        let now = easy.now;
        let res = &c.spec.resources;
        // Only a task that can be placed now needs its estimate (a start's
        // expected end, or whether it may be backfilled): a long queue that
        // does not fit asks the store for no history.
        let placeable = lock(&self.pool).could_place(res, c.needs_gpu_free);
        // First fit alone needs no expected end: nothing is ever reserved.
        let reserving = self.cfg.scheduler.order() != crate::config::Order::FirstFit;
        let estimate = if reserving && placeable {
            self.estimate(&c.spec).map(|e| e.ms)
        } else {
            None
        };
        let decision = {
            let mut pool = lock(&self.pool);
            let d = easy.decide(&mut pool, c.id, res, c.needs_gpu_free, estimate);
            if let Decision::Start(p, _) = &d {
                pool.stagger.started(&p.gpus, c.id, now);
            }
            d
        };
        let reason = match decision {
            Decision::Start(placement, how) => {
                lock(&self.pipeline.place_reasons).remove(&c.id);
                let how = how.map(|b| self.backfilled_text(&b, now));
                let because = match (because, how) {
                    (Some(b), Some(h)) => Some(format!("{b}; {h}")),
                    (b, h) => b.or(h),
                };
                let started = match self.start(c.id, &c.spec, placement.clone(), because, estimate)
                {
                    Ok(run) => {
                        self.runs.start_failures.cleared();
                        run
                    }
                    Err(e) => {
                        self.runs
                            .start_failures
                            .failed(&format!("task {} first", c.id), &format!("{e:#}"));
                        if e.downcast_ref::<TryLater>().is_some() {
                            lock(&self.pipeline.place_reasons)
                                .insert(c.id, format!("not started yet: {e:#}"));
                        }
                        None
                    }
                };
                return match started {
                    Some((run, at)) => {
                        easy.started(c.id, run);
                        // The stagger counts from the start as recorded.
                        lock(&self.pool).stagger.started(&placement.gpus, c.id, at);
                        true
                    }
                    None => {
                        easy.not_started(c.id);
                        self.release(None, &placement);
                        false
                    }
                };
            }
            // Waiting only for a stagger, it says so (its reservation keeps
            // later tasks off the GPU it will take meanwhile).
            Decision::Reserved(r) => lock(&self.pool)
                .staggered(res, c.needs_gpu_free)
                .or_else(|| Some(self.reserved_text(&r, res.gpus, now))),
            Decision::Held(b) => Some(self.behind_text(&b, now)),
            Decision::NoFit => lock(&self.pool).staggered(res, c.needs_gpu_free),
        };
        let mut reasons = lock(&self.pipeline.place_reasons);
        match reason {
            Some(r) => reasons.insert(c.id, r),
            None => reasons.remove(&c.id),
        };
        false
    }

    pub(in crate::daemon) fn release(&self, run: Option<i64>, placement: &Placement) {
        if let Some(run) = run {
            lock(&self.runs.placed).remove(&run);
        }
        lock(&self.pool).give_back(placement);
    }

    /// Claims and launches one task: its run and when it started, or
    /// `Ok(None)` when it was no longer queued. `estimate` (ms) is kept for
    /// backfill.
    fn start(
        self: &Arc<Self>,
        task: i64,
        spec: &crate::task::model::TaskSpec,
        placement: Placement,
        because: Option<String>,
        estimate: Option<i64>,
    ) -> Result<Option<(i64, i64)>> {
        let list = |v: &[u32]| {
            (!v.is_empty()).then(|| v.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
        };
        let new_run = NewRun {
            gpus: list(&placement.gpus),
            cpus: list(&placement.cpus),
            because,
        };
        // Captured before the claim: a daemon stopped meanwhile leaves the
        // task queued, and a refusal (inputs changed) needs no supervisor.
        let captured = self.capture_start(task, spec);
        let now = self.now_ms();
        // The same moment on the monotonic clock: a run's length is
        // measured from here.
        let steady = std::time::Instant::now();
        let Some(run) = self
            .store()
            .claim(task, &new_run, &self.cfg.runs_dir(), now)?
        else {
            return Ok(None);
        };
        self.cache_forget(task);
        if spec.cache
            && let Some(key) = self.cache_key_of(task, spec, captured.start())
            && let Err(e) = self.store().set_run_cache_key(run.id, &key)
        {
            tracing::warn!("run {}: cannot record its cache key: {e}", run.id);
        }
        // The claim is on disk before a supervisor exists to prove it (a
        // run folder the database does not know stops the next start); an
        // executor that holds its runs for the round's flush syncs once
        // for the round there, before it submits any.
        if !self.runs.executor.holds() && !self.durable() {
            self.give_back(run.id);
            return Ok(None);
        }
        let run_id = run.id;
        // A batch system's job may wait before it starts, and SLURM's own
        // time limit backs its supervisor up: only a local run has a
        // deadline of the daemon's from its claim.
        let local = self.runs.executor.local();
        let deadline = spec.resources.timeout.filter(|_| local).map(|t| {
            crate::daemon::run::watchdog::Deadline::timeout(
                std::time::Instant::now(),
                t,
                self.cfg.sandbox.grace,
            )
        });
        let held = Held {
            deadline,
            started_at: now,
            estimate,
            task,
            placement: placement.clone(),
            session: 0,
            dir: PathBuf::from(&run.run_dir),
            owner: self.access.owner_uid(spec.owner.as_ref().map(|o| o.uid)),
            cancel_asked: false,
        };
        lock(&self.runs.placed).insert(run.id, held);
        // A cancel since the claim that looked for the run before it was
        // held here left its word nowhere: the store has it.
        // (One lock at a time: the store's answer first.)
        let asked = self.store().cancel_requested(task).unwrap_or(false);
        if asked && let Some(h) = lock(&self.runs.placed).get_mut(&run_id) {
            h.cancel_asked = true;
        }
        // This machine's power counters say nothing of a run a batch
        // system runs on another node: its energy is the estimate.
        if self.runs.executor.local() {
            self.note_rapl_start(run.id, !placement.gpus.is_empty());
        }
        let cgroup = self
            .runs
            .cgroup
            .as_ref()
            .ok()
            .map(|b| b.dir.join(format!("run-{}", run.id)));
        let prepared = runenv::build(&self.cfg, &self.state, spec, &run, &placement, cgroup)
            .and_then(|mut rs| {
                if let Some(why) = self.record_start(captured, spec, &run, &mut rs, &placement) {
                    anyhow::bail!(why);
                }
                Ok(rs)
            });
        let launched = prepared.and_then(|rs| {
            let output = rs.output.clone();
            let checkpoint = (rs.checkpoint.clone(), rs.checkpoint_note.clone());
            let launch = Launch {
                run: run.id,
                dir: PathBuf::from(&run.run_dir),
                spec: rs,
                resources: spec.resources.clone(),
                started_at: now,
                steady,
            };
            let note = self.sandbox_note(spec);
            let me = Arc::clone(self);
            let started: Started = Box::new(move |session, job| {
                // Under the same lock as `cancel_run`'s look: a cancel sees
                // the session, or leaves its word here.
                let cancel_asked = lock(&me.runs.placed).get_mut(&run_id).is_some_and(|h| {
                    h.session = session;
                    std::mem::take(&mut h.cancel_asked)
                });
                // The run's session exists and waits for its spec: a store
                // that refuses these notes now (locked past its busy
                // timeout) must not strand the run. It goes on; its end is
                // recorded as every end is, and the session is known in
                // memory meanwhile.
                let note = match (note, job) {
                    (Some(n), Some(j)) => Some(format!("{n}; {j}")),
                    (n, j) => n.or(j),
                };
                if let Err(e) = me.store().set_run_started(run_id, session, note.as_deref()) {
                    tracing::warn!("run {run_id}: cannot record its supervisor's pid: {e}");
                }
                if let Some(output) = &output
                    && let Err(e) = me.store().set_run_output(run_id, output)
                {
                    tracing::warn!("run {run_id}: cannot record its output folder: {e}");
                }
                me.record_checkpoint(run_id, checkpoint.0.as_deref(), checkpoint.1.as_deref());
                if cancel_asked {
                    tracing::info!(
                        "run {run_id}: its task was cancelled before it started; stopping it"
                    );
                    me.cancel_run(run_id, Some(i64::from(session)));
                }
            });
            let executor = Arc::clone(&self.runs.executor);
            executor.launch(self, launch, started)
        });
        match launched {
            Ok(()) => Ok(Some((run_id, now))),
            Err(e) if e.downcast_ref::<TryLater>().is_some() => {
                // Its place is freed by the caller, once.
                lock(&self.runs.placed).remove(&run_id);
                self.not_launched(run_id, &e);
                Err(e)
            }
            Err(e) => {
                self.not_launched(run_id, &e);
                Ok(Some((run_id, now)))
            }
        }
    }

    /// Whether a user cancelled `run`'s task while the run had no session
    /// (an executor holding it for its round's flush leaves it out).
    pub fn cancel_asked(&self, run: i64) -> bool {
        lock(&self.runs.placed)
            .get(&run)
            .is_some_and(|h| h.cancel_asked)
    }

    /// A run an executor held for [`Executor::flush`](super::executor::Executor::flush)
    /// could not be submitted, for `why`: given back to the queue, its
    /// place freed, for a [`TryLater`]; failed to prepare else (as
    /// `launch` returning the error would have).
    pub fn launch_failed(self: &Arc<Self>, run: i64, why: anyhow::Error) {
        if why.downcast_ref::<TryLater>().is_some() {
            let held = lock(&self.runs.placed).remove(&run);
            if let Some(h) = held {
                lock(&self.pool).give_back(&h.placement);
                self.runs
                    .start_failures
                    .failed(&format!("task {} first", h.task), &format!("{why:#}"));
                lock(&self.pipeline.place_reasons)
                    .insert(h.task, format!("not started yet: {why:#}"));
            }
        }
        self.not_launched(run, &why);
    }

    /// What follows a launch's error `e` for run `run` (its place already
    /// freed for a [`TryLater`]).
    fn not_launched(self: &Arc<Self>, run: i64, e: &anyhow::Error) {
        if e.downcast_ref::<TryLater>().is_some() {
            // Nothing of it reached the executor (a batch system that did
            // not answer): the run is given back, the attempt not counted,
            // and the task waits for a later pass.
            if !self.give_back(run) {
                // Found again by the next daemon's start: no job, never started.
                tracing::error!("run {run}: cannot give it back now; the next start does");
            }
            return;
        }
        // The run could not even be prepared: record it as an app error.
        let out = RunOutcome {
            class: RunClass::AppError,
            exit_code: None,
            signal: None,
            finished_at: self.now_ms(),
            message: Some(format!("{e:#}")),
        };
        if !self.finish(run, &out) {
            // Nothing else holds this outcome: keep offering it to the store.
            let me = Arc::clone(self);
            tokio::spawn(async move {
                let mut delay = std::time::Duration::from_millis(200);
                while !me.finish(run, &out) {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(std::time::Duration::from_secs(30));
                }
            });
        }
    }

    /// What the sandbox can enforce for a run, for `show`.
    fn sandbox_note(&self, spec: &crate::task::model::TaskSpec) -> Option<String> {
        let mut notes = Vec::new();
        match &self.runs.cgroup {
            Ok(base) => {
                if spec.resources.mem.is_some() && !base.memory {
                    notes.push("memory limit not enforced: the cgroup v2 memory controller is not delegated here".to_string());
                }
            }
            Err(why) => {
                notes.push(format!(
                    "no cgroup (process group and subreaper only): {why}"
                ));
                if spec.resources.mem.is_some() {
                    notes.push("memory limit not enforced".to_string());
                }
            }
        }
        if spec.resources.gpu_mem.is_some() && lock(&self.watch.gpu).is_none() {
            notes.push("gpu_mem not checked: the GPUs are not monitored".to_string());
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}
