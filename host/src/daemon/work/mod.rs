//! Workers off the scheduler thread: the archive worker, notifications and
//! the digest, retention (the hourly gc on its own thread, `nightjar gc`)
//! and the sweeps of runs' outputs.

pub(in crate::daemon) mod archive;
pub(in crate::daemon) mod digest;
pub(in crate::daemon) mod notify;
pub(in crate::daemon) mod retention;
pub(in crate::daemon) mod sweep;
