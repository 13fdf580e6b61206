//! Running a helper program (`git`, `pip`) under a deadline: its output is
//! streamed to a sink (never held whole), and at the deadline its whole
//! process group is killed and its pipes are let go, so a helper that
//! hangs, or leaves a child holding its pipe (even one in a session of its
//! own, which the group kill does not reach), costs no more than the time
//! allowed. One thread: both pipes are polled, non-blocking.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    for fd in [
        out.as_ref().map(|o| o.as_raw_fd()),
        err.as_ref().map(|e| e.as_raw_fd()),
    ]
    .into_iter()
    .flatten()
    {
        // SAFETY: fcntl on a pipe we own.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut timed_out = false;
    while out.is_some() || err.is_some() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            timed_out = true;
            break;
        }
        let mut fds: Vec<libc::pollfd> = [
            out.as_ref().map(|o| o.as_raw_fd()),
            err.as_ref().map(|e| e.as_raw_fd()),
        ]
        .into_iter()
        .flatten()
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
        let ms = left.min(Duration::from_millis(200)).as_millis() as libc::c_int;
        // SAFETY: poll on descriptors we own, with a live buffer.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms.max(1)) };
        if let Some(o) = out.as_mut()
            && drain(o, &mut buf, &mut sink)
        {
            out = None;
        }
        if let Some(e) = err.as_mut() {
            let room = |kept: &mut Vec<u8>, b: &[u8]| {
                let n = b.len().min(STDERR_KEPT.saturating_sub(kept.len()));
                kept.extend_from_slice(&b[..n]);
            };
            if drain(e, &mut buf, &mut |b| room(&mut kept, b)) {
                err = None;
            }
        }
    }
    // The pipes are closed (or let go at the deadline); the helper itself
    // gets what is left of the time to exit. A helper usually closes its
    // pipes by exiting, a moment before it can be reaped: its pidfd wakes
    // this thread the moment it exits (a fixed sleep here cost every git
    // call 5 ms), else short sleeps growing to 5 ms.
    let mut exited = PidFd::open(pid);
    let mut nap = Duration::from_micros(50);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if timed_out || Instant::now() >= deadline {
            timed_out = true;
            // SAFETY: a signal to the helper's own process group, which
            // exists: its leader is our child and not reaped yet.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            break child.wait().ok();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match &exited {
            // Readable yet not reapable (a traced helper): naps from here.
            Some(fd) if fd.wait(left.min(Duration::from_millis(200))) => exited = None,
            Some(_) => {}
            None => {
                std::thread::sleep(nap.min(left));
                nap = (nap * 2).min(Duration::from_millis(5));
            }
        }
    };
    drop((out, err));
    Ok(Ran {
        code: status.and_then(|s| s.code()),
        stderr: String::from_utf8_lossy(&kept).into_owned(),
        timed_out,
    })
}

/// A process's pidfd (Linux 5.3 and later): readable once it has exited.
struct PidFd(std::os::fd::OwnedFd);

impl PidFd {
    /// The pidfd of our child `pid` (not reaped yet); `None` where the
    /// kernel has no pidfds.
    fn open(pid: i32) -> Option<PidFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor, which we own from here on.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
        // SAFETY: a fresh descriptor nothing else owns.
        Some(PidFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Waits until the process exits or `most` passes; whether it exited.
    fn wait(&self, most: Duration) -> bool {
        let mut fd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = most.as_millis().clamp(1, 200) as libc::c_int;
        // SAFETY: poll on a descriptor we own, with a live pollfd.
        unsafe { libc::poll(&mut fd, 1, ms) == 1 }
    }
}

/// Reads what `r` has now into `sink`; true at its end (or an error).
fn drain(r: &mut impl Read, buf: &mut [u8], sink: &mut impl FnMut(&[u8])) -> bool {
    loop {
        match r.read(buf) {
            Ok(0) => return true,
            Ok(n) => sink(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
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
    fn a_helper_that_closes_its_pipes_before_it_exits_is_waited_for() {
        // Its exit comes after its pipes' end: the wait for it (on its
        // pidfd) still sees the code, well within the deadline.
        let r = run(
            Command::new("/bin/sh").args(["-c", "exec >&- 2>&-; sleep 0.3; exit 4"]),
            Instant::now() + Duration::from_secs(10),
            |_| {},
        )
        .unwrap();
        assert_eq!((r.code, r.timed_out), (Some(4), false));
    }

    #[test]
    fn a_pidfd_is_readable_once_its_process_exits() {
        let mut child = Command::new("/bin/true").spawn().unwrap();
        let fd = PidFd::open(child.id() as i32).expect("this kernel has pidfds");
        assert!(fd.wait(Duration::from_secs(10)), "it exited");
        let mut p = libc::pollfd {
            fd: fd.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on a live descriptor, no wait.
        let ready = unsafe { libc::poll(&mut p, 1, 0) };
        assert_eq!(ready, 1, "exited: readable");
        assert!(child.try_wait().unwrap().is_some(), "and reapable");
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
    fn a_child_in_a_session_of_its_own_holding_the_pipe_costs_only_the_deadline() {
        let t0 = Instant::now();
        // `setsid` puts the sleeper out of the group the deadline kills; the
        // shell prints its pid so that this test kills that one process
        // alone (a kill by name would reach the other tests' sleepers,
        // which run alongside).
        let mut out = Vec::new();
        let r = run(
            Command::new("/bin/sh").args(["-c", "setsid sleep 31 & echo $!; sleep 30"]),
            // Long enough that a loaded machine (CI runs the tests eight at
            // a time on two cores) lets the shell print the pid first.
            Instant::now() + Duration::from_secs(2),
            |b| out.extend_from_slice(b),
        )
        .unwrap();
        let sleeper: Option<i32> = String::from_utf8_lossy(&out).trim().parse().ok();
        if let Some(pid) = sleeper.filter(|p| *p > 1) {
            // SAFETY: a signal to one pid this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        assert!(r.timed_out && !r.ok());
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        assert!(sleeper.is_some(), "the shell printed no pid: {out:?}");
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
