//! The local executor: one `nightjar supervise` process per run on this
//! machine, handed its spec on stdin, talked to until it reports the run's
//! end (the daemon acknowledges a report only once it is on disk).

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::executor::{Executor, Launch, Started, Stop};
use crate::daemon::state::{Daemon, lock};
use crate::sandbox::launch::{self, SupervisorCmd};

/// Runs each run under a supervisor of its own, started from this binary.
/// A run's length is its monotonic time from [`Launch::steady`] added to
/// its `started_at`: it assumes the daemon runs on the system clock.
pub struct LocalSupervisor {
    /// How supervisors are started.
    command: SupervisorCmd,
    /// The supervisors started and not yet reaped.
    live: Arc<Mutex<HashSet<i32>>>,
}

impl LocalSupervisor {
    /// Supervisors started from the binary `exe` (its slim sibling
    /// `nightjar-supervise` when there is one).
    pub fn for_exe(exe: &Path) -> LocalSupervisor {
        LocalSupervisor {
            command: SupervisorCmd::for_exe(exe),
            live: Arc::default(),
        }
    }
}

impl Executor for LocalSupervisor {
    fn launch(&self, daemon: &Arc<Daemon>, run: Launch, started: Started) -> anyhow::Result<()> {
        // Known from its first instant: without cgroups, a child of ours
        // that is not a supervisor counts as an orphan. This lock is held
        // across the spawn, and no other is taken meanwhile.
        let l = {
            let mut live = lock(&self.live);
            let l = launch::launch(&self.command, &run.dir)?;
            live.insert(l.pid as i32);
            l
        };
        // The supervisor waits for its spec: nothing of the task runs yet.
        started(l.pid, None);
        let me = Arc::clone(daemon);
        let live = Arc::clone(&self.live);
        tokio::spawn(async move {
            let pid = l.pid as i32;
            let id = run.run;
            // How long it ran comes from the monotonic clock, taken when its
            // status first arrives: a wall clock stepped meanwhile does not
            // stretch or shrink the record.
            let mut ended_at = None;
            let reported = launch::converse(l.child, &run.spec, |s| {
                let me = Arc::clone(&me);
                let at = *ended_at.get_or_insert_with(|| {
                    run.started_at
                        .saturating_add(run.steady.elapsed().as_millis() as i64)
                });
                let mut out = s.outcome();
                out.finished_at = at;
                // Judging the end runs validators: off the runtime's thread.
                // Acknowledged (and the status.json forgone) only once on disk.
                async move {
                    tokio::task::spawn_blocking(move || me.report_end(id, &out))
                        .await
                        .unwrap_or(false)
                }
            })
            .await;
            // Reaped by converse: the pid is no longer our child.
            lock(&live).remove(&pid);
            if reported.is_none() {
                me.record_until_done(id, run.dir).await;
            }
        });
        Ok(())
    }

    fn stop(&self, run: i64, session: u32, dir: &Path, how: Stop) {
        let pid = session as i32;
        // Only a pid that is still this run's supervisor: a pid reused by
        // another process since is left alone.
        if pid <= 0 || !crate::sandbox::liveness::is_supervisor(pid, dir) {
            tracing::debug!("run {run}: no supervisor {pid} left to stop");
            return;
        }
        let signal = match how {
            // The supervisor ends the task: SIGTERM, grace, SIGKILL of the tree.
            Stop::Cancel => libc::SIGTERM,
            // The supervisor passes the task's checkpoint signal on.
            Stop::Checkpoint => libc::SIGUSR1,
            Stop::Kill => libc::SIGKILL,
        };
        crate::sys::kill(pid, signal);
    }

    fn sessions(&self) -> Vec<i32> {
        lock(&self.live).iter().copied().collect()
    }
}
