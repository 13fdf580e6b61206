//! The daemon's own deadlines for runs whose supervisors do not act (and,
//! on the same tick, the wall clock's steps: `clock.rs`). A
//! supervisor enforces a run's timeout and a cancel's grace; one that is
//! stopped (SIGSTOP, a debugger) or hung would stop time for its run. So
//! the daemon keeps, per run, the monotonic instant by which the supervisor
//! must have ended it (timeout + grace + [`SLACK`], or a cancel's or a
//! preemption's grace + [`SLACK`]); past it, the daemon writes the run's status itself, kills
//! the supervisor and the run's whole tree (its cgroup, or its session and
//! what the daemon inherited), and the run is recorded with that reason.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::daemon::state::{Daemon, lock};
use crate::sandbox::files::{self, EndedBy, RunStatus};
use crate::time::now_ms;

/// How long past its own deadline a supervisor is given before the daemon acts.
pub const SLACK: Duration = Duration::from_secs(3);
/// How often the deadlines are looked at.
const EVERY: Duration = Duration::from_millis(500);

/// By when a run must have ended, and what it is recorded as if the
/// daemon has to end it.
#[derive(Debug, Clone)]
pub(in crate::daemon) struct Deadline {
    /// The monotonic instant.
    pub at: Instant,
    /// Timeout or cancelled.
    pub why: EndedBy,
    /// What the record says happened.
    pub note: String,
}

impl Deadline {
    /// A run's timeout: `timeout` after `started` plus its grace and the slack.
    pub fn timeout(started: Instant, timeout: Duration, grace: Duration) -> Deadline {
        Deadline {
            at: later(started, timeout.saturating_add(grace).saturating_add(SLACK)),
            why: EndedBy::Timeout,
            note: format!(
                "timed out after {}: its supervisor did not stop it within the grace (stopped or hung?), so the daemon killed the run's tree",
                humantime::format_duration(timeout)
            ),
        }
    }

    /// A cancel asked now: its grace plus the slack.
    pub fn cancel(grace: Duration) -> Deadline {
        Deadline {
            at: later(Instant::now(), grace.saturating_add(SLACK)),
            why: EndedBy::Cancelled,
            note: "cancelled: its supervisor did not stop it within the grace (stopped or hung?), so the daemon killed the run's tree".into(),
        }
    }

    /// A preemption asked now: the grace the run was given to stop (its
    /// checkpoint's, or the cancel grace) plus the slack.
    pub fn preempt(grace: Duration) -> Deadline {
        Deadline {
            at: later(Instant::now(), grace.saturating_add(SLACK)),
            why: EndedBy::Cancelled,
            note: format!(
                "preempted: its supervisor did not stop it within its {} grace (stopped or hung?), so the daemon killed the run's tree",
                humantime::format_duration(grace)
            ),
        }
    }
}

/// `d` after `from`; a century after it for a `d` too far ahead for the
/// clock (a task's timeout or grace of centuries, as any user may ask):
/// such a deadline never comes, as in the supervisor.
fn later(from: Instant, d: Duration) -> Instant {
    from.checked_add(d)
        .unwrap_or_else(|| from + Duration::from_secs(100 * 365 * 86_400))
}

impl Daemon {
    /// Sets run `run`'s deadline, keeping an earlier one.
    pub(in crate::daemon) fn set_deadline(&self, run: i64, d: Deadline) {
        if let Some(h) = lock(&self.runs.placed).get_mut(&run)
            && h.deadline.as_ref().is_none_or(|old| d.at < old.at)
        {
            h.deadline = Some(d);
        }
    }

    /// Looks at the deadlines every [`EVERY`] and ends the overdue runs.
    pub async fn watchdog_loop(self: Arc<Self>) {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut clock = crate::daemon::watch::clock::ClockWatch::default();
        loop {
            tick.tick().await;
            if let Some(delta) = clock.step() {
                let me = Arc::clone(&self);
                tokio::task::spawn_blocking(move || me.clock_stepped(delta));
            }
            let now = Instant::now();
            let overdue: Vec<(i64, u32, PathBuf, Deadline)> = {
                let mut placed = lock(&self.runs.placed);
                placed
                    .iter_mut()
                    .filter(|(_, h)| h.deadline.as_ref().is_some_and(|d| d.at <= now))
                    .filter_map(|(id, h)| Some((*id, h.session, h.dir.clone(), h.deadline.take()?)))
                    .collect()
            };
            for (run, session, dir, d) in overdue {
                let me = Arc::clone(&self);
                tokio::task::spawn_blocking(move || me.end_overdue(run, session, &dir, &d));
            }
        }
    }

    /// Ends a run its supervisor did not: its status first (so the record
    /// says why), then the supervisor and the tree.
    fn end_overdue(&self, run: i64, session: u32, dir: &std::path::Path, d: &Deadline) {
        tracing::warn!("run {run}: {}", d.note);
        let status = RunStatus {
            started_at: 0,
            finished_at: now_ms(),
            exit_code: None,
            signal: Some(libc::SIGKILL),
            ended_by: d.why,
            message: Some(d.note.clone()),
            log_dropped: 0,
            log_error: None,
            detected: None,
        };
        if let Err(e) = files::write_atomic(dir, files::STATUS, &status) {
            tracing::error!("run {run}: cannot write its status: {e}");
        }
        let executor = Arc::clone(&self.runs.executor);
        executor.stop(run, session, dir, crate::daemon::run::executor::Stop::Kill);
        if !executor.local() {
            // Its job is the batch system's to end; its session is no pid here.
            return;
        }
        let ids = self.run_ids(run, dir);
        if !crate::sandbox::liveness::kill_tree(&ids) {
            tracing::error!("run {run}: some of its processes did not die in 5 s");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_or_grace_too_far_ahead_for_the_clock_never_comes_and_does_not_panic() {
        let now = Instant::now();
        let d = Deadline::timeout(now, Duration::MAX, Duration::from_secs(10));
        assert!(d.at > now + Duration::from_secs(50 * 365 * 86_400));
        assert!(Deadline::preempt(Duration::MAX).at > now);
        assert!(Deadline::cancel(Duration::MAX).at > now);
        let d = Deadline::timeout(now, Duration::from_secs(60), Duration::from_secs(10));
        assert_eq!(d.at, now + Duration::from_secs(73));
    }
}
