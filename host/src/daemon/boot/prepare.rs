//! Before the daemon opens anything: the state dir made private and
//! checked, the daemon's lock taken (naming its real holder when taken),
//! the umask tasks get back.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context, Result, bail};

use crate::config::Config;
use crate::daemon::boot::private;
use crate::sys;

/// The file-mode mask the daemon was started with: tasks get it back (the
/// daemon's own files are made under 077).
static TASK_UMASK: AtomicU32 = AtomicU32::new(0o022);

/// The mask tasks run with.
pub(crate) fn task_umask() -> u32 {
    TASK_UMASK.load(Ordering::Relaxed)
}

/// Creates the state dir (0700) and its folders, refuses one that others
/// could write, makes the daemon's files private (0600), checks the dir is
/// writable, and takes the daemon lock. The returned file holds the lock for
/// the daemon's life. Also sets umask 077 and raises the fd limit.
pub(crate) fn prepare_state_dir(cfg: &Config) -> Result<File> {
    // The mask the process started with, taken once: a second call (the
    // in-process tests start a daemon per test in one process) would read
    // back the 077 set here and hand it to every task after.
    static TAKEN: std::sync::Once = std::sync::Once::new();
    let before = sys::set_umask(0o077);
    TAKEN.call_once(|| TASK_UMASK.store(before, Ordering::Relaxed));
    match sys::raise_nofile_limit() {
        Ok(n) => tracing::debug!("open-file limit {n}"),
        Err(e) => tracing::warn!("cannot raise the open-file limit: {e}"),
    }
    let dir = &cfg.state_dir;
    std::fs::create_dir_all(dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot create state dir {}: {}; choose a writable one with --state-dir or `state_dir` in the config",
            dir.display(),
            private::describe(dir, &e)
        )
    })?;
    private::check_dir(dir)?;
    for d in [cfg.runs_dir(), cfg.scratch_dir()] {
        // SLURM jobs run as their owners enter their own run folders
        // through the runs folder: enterable, not listable.
        let mode = if d == cfg.runs_dir() && cfg.executor.jobs_are_owners() {
            0o711
        } else {
            0o700
        };
        std::fs::create_dir_all(&d)
            .and_then(|_| std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)))
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot create {}: {}",
                    d.display(),
                    private::describe(&d, &e)
                )
            })?;
    }
    let probe = dir.join(".write-test");
    std::fs::write(&probe, b"ok").map_err(|e| match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => anyhow::anyhow!(
            "state dir {}: {}",
            dir.display(),
            private::describe(dir, &e)
        ),
        _ => anyhow::anyhow!(
            "state dir {} is not writable ({e}): fix its permissions or choose another with --state-dir",
            dir.display()
        ),
    })?;
    let _ = std::fs::remove_file(&probe);
    let run_lock = cfg.run_lock_path();
    File::options()
        .create(true)
        .append(true)
        .open(&run_lock)
        .map_err(|e| {
            anyhow::anyhow!(
                "create {}: {}",
                run_lock.display(),
                private::describe(dir, &e)
            )
        })?;
    // Files of an older, less careful nightjar: only we may read or lock them.
    private::tighten(&[
        run_lock,
        cfg.db_path(),
        dir.join("nightjar.db-wal"),
        dir.join("nightjar.db-shm"),
        dir.join("daemon.lock"),
    ])?;
    let path = dir.join("daemon.lock");
    let mut lock = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("open {}", path.display()))?;
    // A daemon killed a moment ago may still be exiting: give it 2 s.
    let t0 = std::time::Instant::now();
    while !sys::flock_exclusive(lock.as_raw_fd(), false)? {
        if t0.elapsed() < std::time::Duration::from_secs(2) {
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        bail!(
            "{} is already using state dir {}; stop it first, or use another --state-dir",
            lock_holder(&path),
            dir.display()
        );
    }
    lock.set_len(0)?;
    write!(lock, "{}", std::process::id())?;
    Ok(lock)
}

/// Who holds `daemon.lock`: the process `/proc/locks` names (the pid the
/// file holds may be a dead daemon's, while a process it started holds on).
fn lock_holder(path: &std::path::Path) -> String {
    let written = std::fs::read_to_string(path).unwrap_or_default();
    let written = written.trim();
    let holder = sys::locks_on(path)
        .into_iter()
        .find(|l| l.kind == "FLOCK")
        .map(|l| l.pid);
    match holder {
        Some(pid) => {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let what = if comm.trim().starts_with("nightjar") {
                "another nightjar daemon".to_string()
            } else {
                format!("process {pid} ({}), not a nightjar daemon,", comm.trim())
            };
            if written == pid.to_string() || written.is_empty() {
                format!("{what} (pid {pid})")
            } else {
                format!("{what} (pid {pid}; the file names pid {written}, which is not the holder)")
            }
        }
        None => format!("another nightjar daemon (pid {written})"),
    }
}
