//! The daemon's side of a run: make the run folder, start the supervisor in
//! its own session with the folder's lock already held, hand it the spec on
//! stdin, and find out later whether a supervisor from before a restart is
//! still alive.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, Result};
use tokio::io::AsyncWriteExt;

use super::files::{self, EndedBy, RunSpec, RunStatus};
use super::supervisor::LOCK_FD;
use crate::sys;

/// How to start a supervisor: the slim `nightjar-supervise` binary next to
/// `nightjar` when it is there, else `nightjar supervise`.
#[derive(Debug, Clone)]
pub struct SupervisorCmd {
    /// The program.
    pub program: std::path::PathBuf,
    /// Arguments before the run folder.
    pub prefix: Vec<String>,
}

impl SupervisorCmd {
    /// Picks the command for the `nightjar` binary at `exe`.
    pub fn for_exe(exe: &Path) -> SupervisorCmd {
        let slim = exe.with_file_name("nightjar-supervise");
        if slim.is_file() {
            SupervisorCmd {
                program: slim,
                prefix: Vec::new(),
            }
        } else {
            SupervisorCmd {
                program: exe.to_path_buf(),
                prefix: vec!["supervise".into()],
            }
        }
    }
}

/// A supervisor this daemon started.
pub struct Launched {
    /// The supervisor process (our child: waiting on it reaps it).
    pub child: tokio::process::Child,
    /// Its pid.
    pub pid: u32,
}

/// Opens a run folder for locking.
pub fn open_dir(dir: &Path) -> std::io::Result<File> {
    File::open(dir)
}

/// Creates the run folder and starts the supervisor on it, writing `spec` to
/// its stdin. The folder's lock is taken here and handed to the supervisor
/// (fd 3), so there is no instant at which the run exists without a holder.
/// Must be called within the tokio runtime.
pub fn launch(sup: &SupervisorCmd, dir: &Path, spec: &RunSpec) -> Result<Launched> {
    std::fs::create_dir_all(dir).with_context(|| format!("create run folder {}", dir.display()))?;
    let lock = open_dir(dir).context("open run folder for locking")?;
    sys::flock_exclusive(lock.as_raw_fd(), false)?;
    let lock_fd = lock.as_raw_fd();
    let mut cmd = std::process::Command::new(&sup.program);
    cmd.args(&sup.prefix)
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
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
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(false)
        .spawn()
        .with_context(|| format!("start supervisor {}", sup.program.display()))?;
    drop(lock);
    let pid = child.id().unwrap_or(0);
    let body = serde_json::to_vec(spec)?;
    if let Some(mut stdin) = child.stdin.take() {
        // Written in the background: a large environment may exceed the pipe buffer.
        tokio::spawn(async move {
            let _ = stdin.write_all(&body).await;
        });
    }
    Ok(Launched { child, pid })
}

/// What a run folder says about its supervisor.
#[derive(Debug)]
pub enum Liveness {
    /// A supervisor holds the lock: the run goes on.
    Alive,
    /// The run ended and reported how.
    Ended(RunStatus),
    /// No supervisor and no readable status: it vanished (host reboot,
    /// kill -9 of the supervisor); a status saying `lost` is now on disk.
    Vanished(RunStatus),
}

/// Checks a run folder. When it reports `Vanished`, a `status.json` marking the
/// run lost has been written under the lock, so no late supervisor can start it.
pub fn probe(dir: &Path) -> Result<Liveness> {
    let lock = match open_dir(dir) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Liveness::Vanished(lost_status()));
        }
        Err(e) => return Err(e).context("open run folder"),
    };
    if !sys::flock_exclusive(lock.as_raw_fd(), false)? {
        return Ok(Liveness::Alive);
    }
    if let Ok(Some(status)) = files::read_json::<RunStatus>(dir, files::STATUS) {
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
        ended_by: EndedBy::Lost,
        message: None,
        log_dropped: 0,
        log_error: None,
    }
}

/// Blocks until no supervisor holds the run folder's lock (call it from a
/// blocking thread). This is how the daemon learns that an adopted run ended.
pub fn wait_unlocked(dir: &Path) -> Result<()> {
    let lock = open_dir(dir)?;
    sys::flock_exclusive(lock.as_raw_fd(), true)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slim_supervisor_is_preferred_and_nightjar_supervise_is_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("nightjar");
        let fallback = SupervisorCmd::for_exe(&exe);
        assert_eq!(fallback.program, exe);
        assert_eq!(fallback.prefix, vec!["supervise".to_string()]);
        std::fs::write(dir.path().join("nightjar-supervise"), "").unwrap();
        let slim = SupervisorCmd::for_exe(&exe);
        assert_eq!(slim.program, dir.path().join("nightjar-supervise"));
        assert!(slim.prefix.is_empty());
    }
}
