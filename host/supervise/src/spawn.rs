//! Starting a run's task for the supervisor: its own process group (and
//! cgroup), pinned cores, a cleared environment, its file-mode mask, and
//! stdout/stderr drained into capped logs by a thread each.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::files::RunSpec;
use super::identity;
use super::logs::CappedLog;
use crate::sys;

/// A log reader thread: bytes dropped by the cap, and a write error.
pub type Reader = std::thread::JoinHandle<(u64, Option<String>)>;

/// Starts the task of `spec`; returns its pid and the log readers.
pub fn spawn(
    spec: &RunSpec,
    cgroup: Option<&Path>,
    logs: [CappedLog; 2],
) -> Result<(i32, Vec<Reader>), String> {
    let (out_r, out_w) = sys::pipe().map_err(|e| format!("pipe: {e}"))?;
    let (err_r, err_w) = sys::pipe().map_err(|e| format!("pipe: {e}"))?;
    let procs_fd = match cgroup {
        Some(cg) => Some(
            File::options()
                .write(true)
                .open(cg.join("cgroup.procs"))
                .map_err(|e| format!("open {}: {e}", cg.join("cgroup.procs").display()))?,
        ),
        None => None,
    };
    let program = spec.argv.first().ok_or("empty command")?;
    // A task of another user drops to them in the child, and enters its
    // workdir only then (std's current_dir would enter it as root).
    let drop_to = match &spec.run_as {
        Some(r) => Some(identity::Become::new(r, &spec.workdir)?),
        None => None,
    };
    let (step_r, step_w) = sys::pipe().map_err(|e| format!("pipe: {e}"))?;
    let step_raw = step_w.as_raw_fd();
    let mut cmd = Command::new(program);
    cmd.args(&spec.argv[1..])
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    if drop_to.is_none() {
        cmd.current_dir(&spec.workdir);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(out_w))
        .stderr(Stdio::from(err_w));
    let cpus = sys::CpuMask::new(&spec.cpus);
    let umask = spec.umask;
    let procs_raw = procs_fd.as_ref().map(|f| f.as_raw_fd());
    // SAFETY: the closure only makes async-signal-safe calls (sigprocmask,
    // setpgid, write, sched_setaffinity, signal, umask, close_range/fcntl,
    // setgroups/setgid/setuid/chdir) on memory prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            sys::unblock_all_signals();
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(fd) = procs_raw
                && libc::write(fd, b"0".as_ptr().cast(), 1) != 1
            {
                return Err(std::io::Error::last_os_error());
            }
            if !cpus.is_empty() {
                sys::pin_to_cpus(&cpus)?;
            }
            // The task starts with default SIGHUP and SIGPIPE (ignored ones
            // would survive exec), its user's file-mode mask, and no fd but 0-2.
            sys::default_signal(libc::SIGHUP);
            sys::default_signal(libc::SIGPIPE);
            if let Some(mask) = umask {
                sys::set_umask(mask);
            }
            sys::cloexec_fds_from(3);
            if let Some(d) = &drop_to
                && let Err((step, e)) = d.apply()
            {
                let _ = libc::write(step_raw, [step as u8].as_ptr().cast(), 1);
                return Err(e);
            }
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    drop(cmd);
    drop(step_w);
    let child = spawned.map_err(|e| {
        let mut b = [0u8; 1];
        let step = File::from(step_r)
            .read(&mut b)
            .ok()
            .filter(|n| *n == 1)
            .and_then(|_| identity::Step::from_byte(b[0]));
        match (step, &spec.run_as) {
            (Some(step), Some(r)) => identity::drop_error(r, &spec.workdir, step, &e),
            _ => spawn_error(program, &spec.workdir, e),
        }
    })?;
    drop(procs_fd);
    let pid = child.id() as i32;
    // The Child handle is dropped without waiting: the loop reaps by pid.
    drop(child);
    let [mut out_log, mut err_log] = logs;
    let readers = vec![
        std::thread::spawn(move || {
            out_log.drain(File::from(out_r));
            (out_log.dropped, out_log.error)
        }),
        std::thread::spawn(move || {
            err_log.drain(File::from(err_r));
            (err_log.dropped, err_log.error)
        }),
    ];
    Ok((pid, readers))
}

fn spawn_error(program: &str, workdir: &Path, e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound if !workdir.is_dir() => {
            format!("workdir {} does not exist", workdir.display())
        }
        std::io::ErrorKind::NotFound => format!("command not found: `{program}` ({e})"),
        std::io::ErrorKind::PermissionDenied => format!("cannot execute `{program}`: {e}"),
        _ => format!("cannot start `{program}`: {e}"),
    }
}
