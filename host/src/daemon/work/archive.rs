//! The archive worker: a thread of its own (a hung NAS blocks it, never the
//! scheduler or the socket) that takes due archives from the store, one at
//! a time, and records each as verified or failed with its next try
//! (`[archive] retry`, doubling up to `retry_max`). Woken when anything
//! changes (a run's end queues its archive) and when the next try is due.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use chrono::TimeZone;

use crate::archive::{self, Origin, Request, Step};
use crate::daemon::state::Daemon;
use crate::store::ArchiveJob;
use crate::time::now_ms;

/// The longest the worker sleeps without looking at the store.
const IDLE: Duration = Duration::from_secs(60);

/// The least wait after a look whose results the store could not take.
const STUCK_MIN: Duration = Duration::from_secs(1);

/// Archives taken from the store per look.
const BATCH: usize = 16;

/// The test hook: the step after which the worker stops (for a kill -9).
const PAUSE_ENV: &str = "NIGHTJAR_TEST_ARCHIVE_PAUSE";

/// The file the test hook writes when it stops, in the state dir.
pub const PAUSED_FILE: &str = "archive-paused";

/// Wakes the archive worker.
#[derive(Default)]
pub struct Wake {
    pending: Mutex<bool>,
    cv: Condvar,
}

impl Wake {
    /// Asks the worker to look at the store now.
    pub fn wake(&self) {
        *crate::daemon::locks::leaf(&self.pending) = true;
        self.cv.notify_one();
    }

    /// Waits until woken or `timeout` passed.
    fn wait(&self, timeout: Duration) {
        let guard = crate::daemon::locks::leaf(&self.pending);
        let (mut guard, _) = self
            .cv
            .wait_timeout_while(guard, timeout, |woken| !*woken)
            .unwrap_or_else(|p| p.into_inner());
        *guard = false;
    }
}

impl Daemon {
    /// Starts the archive worker thread.
    pub fn start_archiver(self: &Arc<Self>) -> anyhow::Result<()> {
        let me = Arc::clone(self);
        let pause = std::env::var(PAUSE_ENV).ok().and_then(|s| Step::parse(&s));
        std::thread::Builder::new()
            .name("nightjar-archive".into())
            .spawn(move || {
                loop {
                    let (_, stuck) = me.archive_due(pause);
                    let next = me.store().next_archive_due().ok().flatten();
                    let mut wait = next.map_or(IDLE, |at| {
                        Duration::from_millis(at.saturating_sub(now_ms()).max(0) as u64).min(IDLE)
                    });
                    if stuck {
                        // The store could not take a try's result (a full
                        // state dir): the try is still due there, so wait
                        // as after a failure instead of trying at once again.
                        wait = wait.max(me.cfg.archive.retry.max(STUCK_MIN));
                    }
                    if !wait.is_zero() {
                        me.work.archive_wake.wait(wait);
                    }
                }
            })?;
        Ok(())
    }

    /// Archives everything due now: how many were verified, and whether
    /// the store failed to give the due ones or to take a try's result.
    pub fn archive_due(&self, pause: Option<Step>) -> (usize, bool) {
        let jobs = match self.store().due_archives(now_ms(), BATCH) {
            Ok(j) => j,
            Err(e) => {
                tracing::warn!("archive: cannot read the due archives: {e}");
                return (0, true);
            }
        };
        let (mut verified, mut stuck) = (0, false);
        for job in &jobs {
            match self.archive_one(job, pause) {
                Some(true) => verified += 1,
                Some(false) => {}
                None => stuck = true,
            }
        }
        (verified, stuck)
    }

    /// One try of one archive, recorded: whether it was verified, or None
    /// when the store could not record the try.
    fn archive_one(&self, job: &ArchiveJob, pause: Option<Step>) -> Option<bool> {
        let date = self
            .cfg
            .tz()
            .timestamp_millis_opt(job.finished_at)
            .single()
            .map_or_else(
                || "unknown-date".to_string(),
                |t| t.format("%Y-%m-%d").to_string(),
            );
        let who = match crate::privsep::identity(job.owner.as_ref()) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!("run {}: not archived: {e}", job.run);
                return None;
            }
        };
        let req = Request {
            owner: who.as_ref(),
            root: &job.root,
            require_mount: self.cfg.archive.require_mount,
            project: &job.project,
            name: &job.name,
            date: &date,
            origin: Origin {
                host: crate::manifest::system::info().hostname,
                state_dir: self.cfg.state_dir.display().to_string(),
                task: job.task,
                run: job.run,
                started_at: job.started_at,
            },
            run_dir: &job.run_dir,
            output: job.output.as_deref(),
            outputs: job.outputs.as_ref(),
        };
        let state_dir = self.cfg.state_dir.clone();
        let mut hook = |step: Step| {
            if pause == Some(step) {
                let _ = std::fs::write(state_dir.join(PAUSED_FILE), format!("{step:?}"));
                tracing::warn!(
                    "archive: paused after {step:?} ({PAUSE_ENV}); waiting to be killed"
                );
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
        };
        let now = now_ms;
        match archive::archive(&req, &mut hook) {
            Ok(done) => {
                let full = job.root.join(&done.path);
                tracing::info!(
                    "run {}: archived to {} ({} files, {} bytes{})",
                    job.run,
                    full.display(),
                    done.files,
                    done.bytes,
                    if done.found {
                        ", found from an earlier try"
                    } else {
                        ""
                    }
                );
                if let Err(e) = self.store().archive_done(job.run, job.task, &full, now()) {
                    tracing::warn!("run {}: archived, but cannot record it: {e}", job.run);
                    return None;
                }
                self.after_archive(job.run);
                self.changed();
                Some(true)
            }
            Err(f) => {
                let failures = job.attempts + 1;
                let next =
                    now().saturating_add(crate::time::span_ms(self.cfg.archive.backoff(failures)));
                tracing::warn!(
                    "run {}: archive try {failures} failed ({}): {}",
                    job.run,
                    f.class.as_str(),
                    f.message
                );
                if let Err(e) =
                    self.store()
                        .archive_failed(job.run, job.task, f.class, &f.message, next, now())
                {
                    tracing::warn!("run {}: cannot record the failed archive: {e}", job.run);
                    return None;
                }
                self.changed();
                Some(false)
            }
        }
    }
}
