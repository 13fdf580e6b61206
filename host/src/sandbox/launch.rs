//! The daemon's side of a run: write the run folder, start the supervisor in
//! its own session with the folder's lock already held, and find out later
//! whether a supervisor from before a restart is still alive.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, Result};

use super::files::{self, RunSpec, RunStatus};
use super::supervisor::LOCK_FD;
use crate::sys;

/// A supervisor this daemon started.
pub struct Launched {
    /// The supervisor process (our child: waiting on it reaps it).
    pub child: tokio::process::Child,
    /// Its pid.
    pub pid: u32,
}

/// Creates the run folder, writes `spec.json`, and starts `exe supervise DIR`.
/// The folder's lock is taken here and handed to the supervisor, so there is
/// no instant at which the run exists without a lock-holder.
pub fn launch(exe: &Path, dir: &Path, spec: &RunSpec) -> Result<Launched> {
    std::fs::create_dir_all(dir).with_context(|| format!("create run folder {}", dir.display()))?;
    files::write_atomic(dir, files::SPEC, spec).context("write spec.json")?;
    let lock = File::options()
        .create(true)
        .append(true)
        .open(dir.join(files::LOCK))
        .context("open run lock")?;
    sys::flock_exclusive(lock.as_raw_fd(), false)?;
    let diag = File::create(dir.join(files::SUPERVISOR_LOG)).context("create supervisor.log")?;
    let lock_fd = lock.as_raw_fd();
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("supervise")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(diag));
    // SAFETY: setsid and dup2 are async-signal-safe; lock_fd stays open in
    // the parent until spawn returns.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::dup2(lock_fd, LOCK_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = tokio::process::Command::from(cmd)
        .kill_on_drop(false)
        .spawn()
        .with_context(|| format!("start supervisor {}", exe.display()))?;
    let pid = child.id().unwrap_or(0);
    drop(lock);
    Ok(Launched { child, pid })
}

/// What a run folder says about its supervisor.
#[derive(Debug)]
pub enum Liveness {
    /// A supervisor holds the lock: the run goes on.
    Alive,
    /// The run ended and reported how.
    Ended(RunStatus),
    /// No supervisor and no status: it vanished (host reboot, kill -9); the
    /// status now on disk says `lost`.
    Vanished(RunStatus),
}

/// Checks a run folder. When it reports `Vanished`, a `status.json` marking the
/// run lost has been written under the lock, so no late supervisor can start it.
pub fn probe(dir: &Path) -> Result<Liveness> {
    let lock = match File::options()
        .create(true)
        .append(true)
        .open(dir.join(files::LOCK))
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Liveness::Vanished(lost_status()));
        }
        Err(e) => return Err(e).context("open run lock"),
    };
    if !sys::flock_exclusive(lock.as_raw_fd(), false)? {
        return Ok(Liveness::Alive);
    }
    if let Some(status) = files::read_json::<RunStatus>(dir, files::STATUS)? {
        return Ok(Liveness::Ended(status));
    }
    let lost = lost_status();
    files::write_atomic(dir, files::STATUS, &lost)?;
    Ok(Liveness::Vanished(lost))
}

fn lost_status() -> RunStatus {
    RunStatus {
        started_at: 0,
        finished_at: crate::time::now_ms(),
        exit_code: None,
        signal: None,
        ended_by: files::EndedBy::Lost,
        message: None,
        log_dropped: 0,
        log_error: None,
    }
}

/// Blocks until no supervisor holds the run folder's lock (call it from a
/// blocking thread). This is how the daemon learns that an adopted run ended.
pub fn wait_unlocked(dir: &Path) -> Result<()> {
    let lock = File::options()
        .create(true)
        .append(true)
        .open(dir.join(files::LOCK))?;
    sys::flock_exclusive(lock.as_raw_fd(), true)?;
    Ok(())
}
