//! Running a helper program (`git`, `pip`) under a deadline: its output is
//! streamed to a sink (never held whole), and at the deadline its whole
//! process group is killed, so a helper that hangs, or leaves a child
//! holding its pipe, costs no more than the time allowed.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Most bytes of a helper's stderr kept (for the note that names its failure).
const STDERR_KEPT: usize = 4096;

/// How a helper ended.
#[derive(Debug)]
pub struct Ran {
    /// Its exit code (absent when killed by a signal).
    pub code: Option<i32>,
    /// The first 4 KiB of its stderr.
    pub stderr: String,
    /// Killed at the deadline.
    pub timed_out: bool,
}

impl Ran {
    /// Exited 0 before the deadline.
    pub fn ok(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }

    /// Its stderr's first line (for notes).
    pub fn first_line(&self) -> &str {
        self.stderr.lines().next().unwrap_or("").trim()
    }
}

/// Runs `cmd` (stdin from /dev/null, in a process group of its own) until
/// it exits or `deadline` passes, handing its stdout to `sink` as it comes.
/// An error: it could not be started (not found, not executable).
pub fn run(
    cmd: &mut Command,
    deadline: Instant,
    mut sink: impl FnMut(&[u8]),
) -> std::io::Result<Ran> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn()?;
    let pid = child.id() as i32;
    // `done` is set once the helper has exited (before it is reaped), so the
    // watchdog never signals a process group id that could be reused.
    let done = Arc::new(Mutex::new(false));
    let timed_out = Arc::new(Mutex::new(false));
    let (stop, stopped) = mpsc::channel::<()>();
    let watchdog = {
        let (done, timed_out) = (Arc::clone(&done), Arc::clone(&timed_out));
        std::thread::spawn(move || {
            let left = deadline.saturating_duration_since(Instant::now());
            if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(left) {
                let done = done.lock().unwrap_or_else(|p| p.into_inner());
                if !*done {
                    *timed_out.lock().unwrap_or_else(|p| p.into_inner()) = true;
                    // SAFETY: a plain signal to the helper's own process
                    // group, which exists: its leader is not reaped yet.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                }
            }
        })
    };
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = e.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let room = STDERR_KEPT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            String::from_utf8_lossy(&kept).into_owned()
        })
    });
    if let Some(mut out) = child.stdout.take() {
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            match out.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => sink(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
    }
    wait_exited(pid);
    *done.lock().unwrap_or_else(|p| p.into_inner()) = true;
    let _ = stop.send(());
    let _ = watchdog.join();
    let status = child.wait()?;
    let stderr = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    let timed_out = *timed_out.lock().unwrap_or_else(|p| p.into_inner());
    Ok(Ran {
        code: status.code(),
        stderr,
        timed_out,
    })
}

/// Waits until process `pid` (our child) has exited, leaving it unreaped.
fn wait_exited(pid: i32) {
    loop {
        // SAFETY: waitid on our own child with WNOWAIT only observes it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn output_streams_to_the_sink_and_the_code_comes_back() {
        let mut got = Vec::new();
        let r = run(
            Command::new("/bin/sh").args(["-c", "printf hello; echo oops >&2; exit 3"]),
            Instant::now() + Duration::from_secs(10),
            |b| got.extend_from_slice(b),
        )
        .unwrap();
        assert_eq!(got, b"hello");
        assert_eq!((r.code, r.timed_out), (Some(3), false));
        assert_eq!(r.first_line(), "oops");
    }

    #[test]
    fn a_helper_that_hangs_is_killed_with_its_children_at_the_deadline() {
        let t0 = Instant::now();
        // The child `sleep` keeps the pipe open after its parent is gone.
        let r = run(
            Command::new("/bin/sh").args(["-c", "sleep 30 & sleep 30"]),
            Instant::now() + Duration::from_millis(300),
            |_| {},
        )
        .unwrap();
        assert!(r.timed_out && !r.ok());
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }

    #[test]
    fn a_missing_program_is_an_error() {
        let e = run(
            &mut Command::new("/definitely/not/a/program"),
            Instant::now() + Duration::from_secs(1),
            |_| {},
        )
        .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }
}
