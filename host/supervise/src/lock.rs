//! A run's lock: byte `run` of the state dir's `runs.lock`, held by its
//! supervisor for as long as it lives. The daemon probes it to learn
//! whether a run's supervisor is alive, and blocks on it to learn when an
//! adopted run ends.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

use crate::sys;

/// The run's lock: byte `run` of the state dir's `runs.lock`, on a fresh
/// open file description (a lock per description, so runs never share one).
fn open_lock(lock_file: &Path) -> std::io::Result<File> {
    File::options().read(true).write(true).open(lock_file)
}

/// Takes run `run`'s lock on a fresh descriptor; `Ok(None)` when it is held
/// (its supervisor is alive).
pub fn try_lock(lock_file: &Path, run: i64) -> Result<Option<File>> {
    let f = open_lock(lock_file).with_context(|| format!("open {}", lock_file.display()))?;
    Ok(sys::ofd_lock_byte(f.as_raw_fd(), run, false)?.then_some(f))
}

/// Blocks until no supervisor holds run `run`'s lock (call it from a blocking
/// thread). This is how the daemon learns that an adopted run ended.
pub fn wait_unlocked(lock_file: &Path, run: i64) -> Result<()> {
    let f = open_lock(lock_file)?;
    sys::ofd_lock_byte(f.as_raw_fd(), run, true)?;
    Ok(())
}
