//! A run after it started: recording its end exactly once (retrying while
//! the store refuses), finding out whether anything of it is alive, and
//! re-adopting runs at daemon start.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::daemon::run::runenv;
use crate::daemon::state::{Daemon, lock};
use crate::sandbox::files::{self, RunStatus};
use crate::sandbox::launch::Liveness;
use crate::sandbox::liveness::{self, RunIds};
use crate::store::{RunClass, RunOutcome};
use crate::time::now_ms;

impl Daemon {
    /// Records a run whose supervisor ended without a recorded report, again
    /// and again (backing off to every 30 s) until the store has it: the
    /// status stays in the run folder (or with its live supervisor) meanwhile.
    pub async fn record_until_done(self: Arc<Self>, run: i64, dir: PathBuf) {
        let mut delay = std::time::Duration::from_millis(200);
        loop {
            // Judging the end runs validators: off the runtime's thread.
            let (me, d) = (Arc::clone(&self), dir.clone());
            let done = tokio::task::spawn_blocking(move || me.run_ended(run, &d))
                .await
                .unwrap_or(false);
            if done {
                return;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(std::time::Duration::from_secs(30));
        }
    }

    /// Called when a run's supervisor is gone without a recorded report: read
    /// the status it left (or mark the run lost) and record it. False when it
    /// is not recorded yet (the store refused, or the run is still alive).
    pub fn run_ended(&self, run: i64, dir: &Path) -> bool {
        let out = match files::read_json::<RunStatus>(dir, files::STATUS) {
            Ok(Some(status)) => status.outcome(),
            Ok(None) | Err(_) => {
                match liveness::probe(&self.cfg.run_lock_path(), &self.run_ids(run, dir)) {
                    Ok(Liveness::Vanished(_)) if !files::was_started(dir) => {
                        return self.give_back(run);
                    }
                    Ok(Liveness::Ended(s) | Liveness::Vanished(s)) => s.outcome(),
                    Ok(Liveness::Alive) => return false,
                    Err(e) => RunOutcome {
                        class: RunClass::Lost,
                        exit_code: None,
                        signal: None,
                        finished_at: now_ms(),
                        message: Some(format!("cannot read run folder: {e:#}")),
                    },
                }
            }
        };
        self.finish(run, &out)
    }

    /// Records run `run`, whose supervisor never reached its task, as given
    /// back (the attempt not counted; `store/give_back.rs`) and frees what
    /// it held; true once recorded (or already).
    pub(in crate::daemon) fn give_back(&self, run: i64) -> bool {
        // Nothing ran: whatever the monitor kept for it is dropped.
        let _ = lock(&self.watch.gpu).as_mut().map(|m| m.take_run(run));
        let given = self.store().give_back(run, self.now_ms());
        let recorded = match given {
            Ok(_) => true,
            Err(e) => {
                tracing::error!("run {run}: cannot give it back yet ({e:#})");
                false
            }
        };
        let held = lock(&self.runs.placed).remove(&run);
        if let Some(h) = held {
            lock(&self.pool).give_back(&h.placement);
        }
        if let Ok(base) = &self.runs.cgroup {
            let _ = std::fs::remove_dir(base.dir.join(format!("run-{run}")));
        }
        self.changed();
        recorded
    }

    /// An executor's report of a run's end: judged and recorded, then
    /// flushed; true once it is on disk (the executor may then forget it:
    /// the local supervisor acknowledges and skips its `status.json`).
    /// Blocking: call it off the runtime's thread.
    pub fn report_end(&self, run: i64, out: &RunOutcome) -> bool {
        self.finish(run, out) && self.durable()
    }

    /// Judges a run's end (validators, when it exited 0) and records it;
    /// true once it is committed (or was already). What the run held is
    /// given back either way: its processes are gone. Blocking: call it off
    /// the runtime's thread.
    pub(in crate::daemon) fn finish(&self, run: i64, out: &RunOutcome) -> bool {
        let (records, gpu_energy) = lock(&self.watch.gpu)
            .as_mut()
            .map(|m| m.take_run(run))
            .unwrap_or_default();
        // A run on a cluster node: its GPUs were sampled there.
        let node = match records.is_empty() && !self.runs.executor.local() {
            true => self.node_gpus(run),
            false => None,
        };
        let (records, gpu_energy, series) = match node {
            Some(n) => (n.records, n.energy, n.series),
            None => (records, gpu_energy, Vec::new()),
        };
        // Before the end is recorded, so whoever sees the end sees the
        // energy; a store that refuses it refuses the end too, and both are
        // offered again (the energy kept until then).
        // Each lock for its own statement (daemon/locks.rs): the store's
        // answer is taken before `pending_energy` is touched again.
        let pending = lock(&self.runs.pending_energy).remove(&run);
        let energy = pending.or_else(|| self.run_energy(run, gpu_energy, out.finished_at));
        let stored = match energy {
            Some(e) => {
                let written = self.store().record_run_energy(run, &e);
                match written {
                    Ok(_) => Ok(()),
                    Err(err) => {
                        lock(&self.runs.pending_energy).insert(run, e);
                        Err(anyhow::anyhow!("its energy: {err}"))
                    }
                }
            }
            None => Ok(()),
        };
        // `newly`: this call recorded the end (not an earlier one, which a
        // retried report or a SLURM poll meets again).
        let (recorded, newly) = match stored.and_then(|()| {
            self.conclude(run, out, &records)
                .map_err(anyhow::Error::from)
        }) {
            Ok(finished) => (true, finished.is_some()),
            Err(e) => {
                tracing::error!(
                    "run {run}: cannot record its end yet ({e:#}); its status is kept and recorded when the store accepts it"
                );
                (false, false)
            }
        };
        let held = lock(&self.runs.placed).remove(&run);
        if let Some(h) = held {
            lock(&self.pool).give_back(&h.placement);
        }
        if newly && out.class == RunClass::Ok {
            self.learn_duration(run);
        }
        if !records.is_empty()
            && let Err(e) = self.store().record_run_gpus(&records)
        {
            tracing::error!("run {run}: cannot store its GPU record: {e}");
        }
        // Only by the call that recorded the end: a retried report would
        // store the node's series twice.
        if newly
            && !series.is_empty()
            && let Err(e) = self.store().add_series(&series)
        {
            tracing::error!("run {run}: cannot store its GPU series: {e}");
        }
        if out.class == RunClass::Ok
            && let Err(e) = self.state.remove_all(&runenv::scratch_rel(run))
        {
            tracing::warn!("run {run}: cannot remove its scratch folder: {e}");
        }
        if let Ok(base) = &self.runs.cgroup {
            let _ = std::fs::remove_dir(base.dir.join(format!("run-{run}")));
        }
        self.changed();
        recorded
    }

    /// What run `run`'s GPUs did on its cluster node, from the samples in
    /// its run folder (`gpu/node.rs`); none where nothing was sampled.
    fn node_gpus(&self, run: i64) -> Option<crate::gpu::node::NodeGpus> {
        let row = self.store().run(run).ok()?;
        crate::gpu::node::read(
            Path::new(&row.run_dir),
            run,
            crate::daemon::watch::gpus::monitor_config(&self.cfg),
            Some(self.cfg.tariff()),
        )
    }

    /// An ended run's energy and cost: its GPUs' share from the monitor,
    /// else (CPU-only) RAPL or the estimate.
    fn run_energy(
        &self,
        run: i64,
        gpu: Option<crate::gpu::energy::RunEnergy>,
        end: i64,
    ) -> Option<crate::gpu::energy::RunEnergy> {
        match gpu {
            Some(e) => Some(e),
            // Only the first end's: a repeated one (a retried report, a
            // SLURM poll meeting the end again) finds the GPU monitor's
            // share already taken and must not replace it, nor read RAPL
            // past the run's end.
            None => {
                let row = self.store().run(run).ok();
                row.filter(|row| row.energy.is_none())
                    .and_then(|row| self.cpu_energy(&row, end))
            }
        }
    }

    /// What liveness needs to know of run `run` in `dir`: its supervisor's pid
    /// from the store, its cgroup, and without cgroups the supervisors this
    /// daemon started and has not reaped, so that its other children (it is
    /// a subreaper) are known as orphans of a dead one.
    pub(in crate::daemon) fn run_ids<'a>(&self, run: i64, dir: &'a Path) -> RunIds<'a> {
        let reaper = self.runs.cgroup.is_err().then(|| {
            let live = self.runs.executor.sessions();
            (std::process::id() as i32, live)
        });
        RunIds {
            reaper,
            run,
            dir,
            supervisor: self
                .store()
                .run(run)
                .ok()
                .and_then(|r| r.supervisor_pid)
                .map(|p| p as i32),
            cgroup: self
                .runs
                .cgroup
                .as_ref()
                .ok()
                .map(|b| b.dir.join(format!("run-{run}"))),
        }
    }

    /// Cancels a run: asked of its executor (the local supervisor gets
    /// SIGTERM), with a deadline after which the daemon ends the run itself
    /// (a supervisor stopped or hung).
    pub fn cancel_run(&self, run: i64, pid: Option<i64>) {
        // No session on record: the one in memory, else the word left for
        // the run's start (`start.rs`), under the lock its start takes.
        let pid = pid.or_else(|| {
            let mut placed = crate::daemon::state::lock(&self.runs.placed);
            let h = placed.get_mut(&run)?;
            if h.session > 0 {
                return Some(i64::from(h.session));
            }
            h.cancel_asked = true;
            None
        });
        self.stop_run(run, pid, crate::daemon::run::executor::Stop::Cancel);
        self.set_deadline(
            run,
            crate::daemon::run::watchdog::Deadline::cancel(self.cfg.sandbox.grace),
        );
    }

    /// Asks a run's executor to stop it, `how` says.
    pub(in crate::daemon) fn stop_run(
        &self,
        run: i64,
        pid: Option<i64>,
        how: crate::daemon::run::executor::Stop,
    ) {
        let Some(pid) = pid.and_then(|p| u32::try_from(p).ok()) else {
            return;
        };
        let Ok(row) = self.store().run(run) else {
            return;
        };
        let executor = std::sync::Arc::clone(&self.runs.executor);
        executor.stop(run, pid, std::path::Path::new(&row.run_dir), how);
    }
}
