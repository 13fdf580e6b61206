//! Workers off the scheduler thread: the archive worker, notifications and
//! the digest, retention (the hourly gc on its own thread, `nightjar gc`)
//! and the sweeps of runs' outputs.

pub(in crate::daemon) mod archive;
pub(in crate::daemon) mod digest;
pub(in crate::daemon) mod notify;
pub(in crate::daemon) mod retention;
pub(in crate::daemon) mod sweep;

use std::sync::Mutex;

use crate::daemon::state::lock;

/// The workers' part of the daemon: how to wake each (a change wakes them all).
#[derive(Default)]
pub struct Parts {
    /// The notification thread, once it runs.
    notify: Mutex<Option<crate::notify::worker::Handle>>,
    /// Wakes the archive worker.
    archive_wake: archive::Wake,
}

impl Parts {
    /// Wakes every worker to look at what changed.
    pub(in crate::daemon) fn wake(&self) {
        self.archive_wake.wake();
        if let Some(h) = lock(&self.notify).as_ref() {
            h.wake();
        }
    }
}
