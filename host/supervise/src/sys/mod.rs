//! Thin safe wrappers over the few Linux calls the sandbox needs.
//! Each returns `io::Error` from errno; nothing here panics on user input.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub mod bounded;
mod cpus;
mod process;
mod procfs;

pub use cpus::{CpuMask, MAX_CPU_ID, pin_to_cpus};
pub use process::{Exit, has_children, kill, killpg, reap, reap_any, set_child_subreaper};
pub use procfs::{FileLock, descendants, locks_on, parent_of};

/// The host's name (read once; `this host` when the kernel will not say),
/// for daemon events and mail headers.
pub fn host_name() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "this host".into())
    })
}

/// The stack of the threads that walk or remove what tasks made: a margin
/// (removal is iterative, walks are bounded in depth), reserved and
/// committed only as used.
pub const BIG_STACK: usize = 64 << 20;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Takes (or, with `block` false, tries to take) an exclusive lock on `fd`.
/// Returns `Ok(false)` when a non-blocking attempt finds it held elsewhere.
pub fn flock_exclusive(fd: RawFd, block: bool) -> io::Result<bool> {
    let op = libc::LOCK_EX | if block { 0 } else { libc::LOCK_NB };
    loop {
        // SAFETY: flock on a caller-owned descriptor has no memory effects.
        match check(unsafe { libc::flock(fd, op) }) {
            Ok(_) => return Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Takes (or, with `block` false, tries to take) an exclusive open-file-
/// description lock on byte `at` of `fd`'s file. The lock belongs to the open
/// file description: it passes to a child with the descriptor and is released
/// when the last descriptor to it closes. Returns `Ok(false)` when a
/// non-blocking attempt finds it held elsewhere.
pub fn ofd_lock_byte(fd: RawFd, at: i64, block: bool) -> io::Result<bool> {
    // SAFETY: flock is plain data; fcntl reads it.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = at;
    fl.l_len = 1;
    let cmd = if block {
        libc::F_OFD_SETLKW
    } else {
        libc::F_OFD_SETLK
    };
    loop {
        // SAFETY: fl is a valid flock for the duration of the call.
        match check(unsafe { libc::fcntl(fd, cmd, &fl) }) {
            Ok(_) => return Ok(true),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {
                return Ok(false);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Sets close-on-exec on a descriptor.
pub fn set_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor; no memory is passed.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFD) })?;
    // SAFETY: as above; F_SETFD takes an int, no memory.
    check(unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) })?;
    Ok(())
}

/// A pipe whose both ends are close-on-exec: (read, write).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both descriptors are fresh and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The signal set of `signals`.
pub fn sigset(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in signals {
            libc::sigaddset(&mut set, *s);
        }
        set
    }
}

/// Blocks `signals` for this thread (and threads it creates later).
pub fn block_signals(set: &libc::sigset_t) -> io::Result<()> {
    // SAFETY: set is a valid sigset_t.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, set, std::ptr::null_mut()) };
    if r != 0 {
        Err(io::Error::from_raw_os_error(r))
    } else {
        Ok(())
    }
}

/// Clears the signal mask; for use between fork and exec.
///
/// # Safety
/// Async-signal-safe: only calls sigprocmask.
pub unsafe fn unblock_all_signals() {
    // SAFETY: an empty set is valid; sigprocmask is async-signal-safe.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// Ignores a signal (SIGPIPE, SIGHUP) in this process.
pub fn ignore_signal(sig: libc::c_int) {
    // SAFETY: installing SIG_IGN has no memory effects.
    unsafe {
        libc::signal(sig, libc::SIG_IGN);
    }
}

/// Restores a signal's default action; for use between fork and exec too.
pub fn default_signal(sig: libc::c_int) {
    // SAFETY: installing SIG_DFL has no memory effects; signal() is async-signal-safe.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
    }
}

/// Sets the process's file-mode creation mask; returns the previous one.
pub fn set_umask(mask: u32) -> u32 {
    // SAFETY: umask cannot fail and is async-signal-safe.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// `close_range(from, ~0, flags)`, falling back to a loop over the fd
/// limit where the kernel lacks it (before 5.9). Async-signal-safe.
fn for_fds_from(from: i32, flags: libc::c_uint, each: impl Fn(i32)) {
    // SAFETY: close_range takes plain integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            from as libc::c_uint,
            libc::c_uint::MAX,
            flags,
        )
    };
    if r == 0 {
        return;
    }
    let mut lim: libc::rlimit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a valid out-pointer.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_cur.min(65_536) as i32
    } else {
        1024
    };
    (from..max).for_each(each);
}

/// Closes every descriptor from `from` up.
pub fn close_fds_from(from: i32) {
    for_fds_from(from, 0, |fd| {
        // SAFETY: closing a descriptor number we do not use; EBADF is harmless.
        unsafe {
            libc::close(fd);
        }
    });
}

/// Marks every descriptor from `from` up close-on-exec (between fork and
/// exec, so the exec'd program gets none of them). Async-signal-safe.
pub fn cloexec_fds_from(from: i32) {
    // CLOSE_RANGE_CLOEXEC (Linux 5.11).
    const CLOEXEC: libc::c_uint = 1 << 2;
    for_fds_from(from, CLOEXEC, |fd| {
        // SAFETY: fcntl on a descriptor number; EBADF is harmless.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    });
}

/// The C library's type for a resource name (`RLIMIT_*`): its own enum in
/// glibc, an int in musl (the static binaries: `host/static`).
#[cfg(target_env = "gnu")]
pub type Resource = libc::__rlimit_resource_t;
/// The C library's type for a resource name (`RLIMIT_*`).
#[cfg(not(target_env = "gnu"))]
pub type Resource = libc::c_int;

/// A resource limit: `(soft, hard)`.
pub fn rlimit(resource: Resource) -> io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a valid out-pointer.
    check(unsafe { libc::getrlimit(resource, &mut lim) })?;
    Ok((lim.rlim_cur, lim.rlim_max))
}

/// Sets a resource limit to `soft` and `hard`. One system call and nothing
/// else (no allocation, no lock): safe in a `pre_exec` hook between fork
/// and exec.
pub fn set_rlimit(resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: lim is a valid rlimit for the call to read.
    check(unsafe { libc::setrlimit(resource, &lim) }).map(drop)
}

/// Raises the soft limit on open files to the hard limit; returns the new limit.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut lim: libc::rlimit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a valid out-pointer.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: lim is valid; raising the soft limit up to the hard one is always allowed.
        check(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) })?;
    }
    Ok(lim.rlim_cur)
}

/// A signalfd delivering the (already blocked) signals of `set`.
pub fn signalfd(set: &libc::sigset_t) -> io::Result<OwnedFd> {
    // SAFETY: set is valid; -1 asks for a new descriptor.
    let fd = check(unsafe { libc::signalfd(-1, set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) })?;
    // SAFETY: signalfd returned a fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reads every pending signal from a signalfd.
pub fn read_signals(fd: &OwnedFd) -> Vec<i32> {
    let mut out = Vec::new();
    loop {
        // SAFETY: signalfd_siginfo is plain data of the size read() fills.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        // SAFETY: read into `info`, a live buffer of exactly the length given.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                std::mem::size_of::<libc::signalfd_siginfo>(),
            )
        };
        if n as usize != std::mem::size_of::<libc::signalfd_siginfo>() {
            return out;
        }
        out.push(info.ssi_signo as i32);
    }
}

/// Waits up to `timeout_ms` (-1: forever) for `fd` to be readable.
pub fn poll_readable(fd: &OwnedFd, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    match check(unsafe { libc::poll(&mut p, 1, timeout_ms) }) {
        Ok(n) => Ok(n > 0),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
        Err(e) => Err(e),
    }
}

/// Lowers the calling thread's scheduling priority to `nice` (Linux keeps a
/// nice value per thread); a failure is only logged.
pub fn nice_this_thread(nice: i32) {
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
    // SAFETY: setpriority takes plain integers.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) } != 0 {
        tracing::debug!(
            "cannot lower this thread's priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid pointer given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// Milliseconds since boot, suspend included (`CLOCK_BOOTTIME`): the clock
/// a wall-clock step does not move.
pub fn boot_ms() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}
