//! Child processes and signals to processes: reaping (one child, any
//! child), whether any is left, `kill`/`killpg`, and becoming the reaper of
//! orphaned descendants.

use std::io;

use super::check;

/// How a reaped process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

/// Reaps child `pid` if it has exited, without blocking: true when it was
/// reaped (a pid that is not our child is left alone, and so is a pid of
/// 0 or below, which `waitpid` would read as "any child": another's exit).
pub fn reap(pid: i32) -> bool {
    // SAFETY: waitpid on one pid with WNOHANG; a null status is allowed;
    // a pid that is not our child is ECHILD.
    pid > 0 && unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) == pid }
}

/// Reaps one exited child without blocking.
pub fn reap_any() -> Option<(i32, Exit)> {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    if pid <= 0 {
        return None;
    }
    let exit = if libc::WIFEXITED(status) {
        Exit::Code(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        return Some((pid, Exit::Code(-1)));
    };
    Some((pid, exit))
}

/// True while this process has children (direct, or orphans re-parented to
/// it as subreaper), exited or not. With no children, no descendant is left.
pub fn has_children() -> bool {
    // SAFETY: WNOHANG|WNOWAIT peeks without reaping; a null status is allowed.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid writes only into `info`, which lives here; WNOWAIT
    // leaves any child unreaped.
    let r = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    !(r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

/// Sends `sig` to a process; a missing process is not an error.
pub fn kill(pid: i32, sig: i32) {
    if pid > 0 {
        // SAFETY: kill has no memory effects.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Sends `sig` to a process group.
pub fn killpg(pgid: i32, sig: i32) {
    if pgid > 1 {
        // SAFETY: killpg has no memory effects.
        unsafe {
            libc::killpg(pgid, sig);
        }
    }
}

/// Makes this process the reaper of its orphaned descendants, so a
/// double-forked grandchild stays in its tree.
pub fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }).map(|_| ())
}

#[cfg(test)]
mod tests {
    #[test]
    fn reap_takes_only_the_child_named() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let t0 = std::time::Instant::now();
        let zombie = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
        };
        while !zombie() {
            assert!(t0.elapsed().as_secs() < 10, "`true` did not exit");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // 0 and -1 would be "any child" to waitpid: the exit is not theirs.
        assert!(!super::reap(0));
        assert!(!super::reap(-1));
        assert!(super::reap(pid));
        assert!(!super::reap(pid), "reaped once");
        let _ = child.try_wait();
    }
}
