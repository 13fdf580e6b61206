//! Threads that act as a task's owner on the filesystem.
//!
//! Linux keeps credentials per thread; the C library's `setgroups` and
//! `setfsuid` wrappers (and std's) change every thread of the process at
//! once, the raw system calls change only the caller. A fresh thread makes
//! the raw calls, does the owner's work and ends, so the identity can never
//! leak into other work of the daemon. Its real and saved uids stay 0: the
//! owner cannot signal or trace it (the kernel checks those, and marks the
//! process non-dumpable when a thread's fsuid changes).

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::mpsc;

use crate::sandbox::files::RunAs;

/// Proof that the code holding it runs on a thread acting as `who` (or as
/// the daemon's own user, when `who` is `None`).
#[derive(Clone, Copy)]
pub struct Owned<'a> {
    who: Option<&'a RunAs>,
}

impl Owned<'static> {
    /// The daemon's own identity, for work that is the daemon's alone
    /// (tests, tools run by the admin on their own files).
    pub fn own() -> Owned<'static> {
        Owned { who: None }
    }
}

impl Owned<'_> {
    /// `program` to run as the owner: it drops to their uid, gid and groups
    /// for good before it executes, with `HOME`, `USER` and `LOGNAME`
    /// theirs. The daemon's own identity when no drop is needed.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Result<Command, String> {
        let mut c = Command::new(program);
        // Not the daemon's folder (a caller may name another, entered as
        // the owner in the child).
        c.current_dir("/");
        if let Some(w) = self.who {
            c.env("HOME", &w.home)
                .env("USER", &w.name)
                .env("LOGNAME", &w.name);
            // "." : the child stays where `current_dir` put it (entered
            // as the owner: the fork has this thread's identity).
            let become_ = crate::sandbox::identity::Become::new(w, std::path::Path::new("."))?;
            // SAFETY: `apply` makes only async-signal-safe calls on memory
            // prepared before the fork.
            unsafe {
                c.pre_exec(move || become_.apply().map_err(|(_, e)| e));
            }
        }
        Ok(c)
    }

    /// The uid this thread acts as, when it is not the daemon's own.
    pub fn uid(&self) -> Option<u32> {
        self.who.map(|w| w.uid)
    }

    /// The home folder of whom this thread acts as: the owner's, else the
    /// daemon's `HOME` (what [`Owned::command`]'s programs see).
    pub fn home(&self) -> Option<std::path::PathBuf> {
        match self.who {
            Some(w) => Some(w.home.clone()),
            None => std::env::var_os("HOME").map(std::path::PathBuf::from),
        }
    }
}

/// Runs `f` on a fresh thread acting as `who` on the filesystem (see the
/// module's doc), and returns what it returns. `None`: the daemon's own
/// user, on the calling thread (no identity to take, so no thread).
pub fn as_owner<T: Send>(
    who: Option<&RunAs>,
    f: impl FnOnce(Owned<'_>) -> T + Send,
) -> Result<T, String> {
    as_owner_serving(who, |()| (), move |o, _: &Ask<'_, (), ()>| f(o))
}

/// A question the owner's thread asks the daemon's (a lookup in the store,
/// which the owner's thread must not open files of).
pub struct Ask<'s, Q, A> {
    to: To<'s, Q, A>,
}

/// Who answers an [`Ask`].
enum To<'s, Q, A> {
    /// The daemon's thread, which waits on the owner's.
    Thread(mpsc::Sender<(Q, mpsc::SyncSender<A>)>),
    /// The daemon's own user's work runs on the daemon's thread: `serve`
    /// is called in place. A panic of `serve` (the daemon's side, say a
    /// lock rule broken) is kept here and raised again once the work is
    /// done, so it is not mistaken for the work's own.
    Inline(
        std::cell::RefCell<&'s mut dyn FnMut(Q) -> A>,
        std::cell::Cell<Option<Box<dyn std::any::Any + Send>>>,
    ),
}

impl<Q, A> Ask<'_, Q, A> {
    /// The daemon thread's answer to `q` (`None` if it is gone).
    pub fn ask(&self, q: Q) -> Option<A> {
        match &self.to {
            To::Thread(tx) => {
                let (reply, answer) = mpsc::sync_channel(1);
                tx.send((q, reply)).ok()?;
                answer.recv().ok()
            }
            To::Inline(serve, panicked) => {
                let mut serve = serve.try_borrow_mut().ok()?;
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (*serve)(q))) {
                    Ok(a) => Some(a),
                    Err(p) => {
                        panicked.set(Some(p));
                        None
                    }
                }
            }
        }
    }
}

/// As [`as_owner`], while the calling thread answers the questions `f`
/// asks through its [`Ask`] with `serve` (as the daemon). For the daemon's
/// own user (`who` is `None`) `f` runs on the calling thread, which saves a
/// thread (and its 64 MiB stack mapped and unmapped) per call: a capture
/// at each submit and each start. A panic in `f` is an error either way.
pub fn as_owner_serving<T: Send, Q: Send, A: Send>(
    who: Option<&RunAs>,
    mut serve: impl FnMut(Q) -> A,
    f: impl FnOnce(Owned<'_>, &Ask<'_, Q, A>) -> T + Send,
) -> Result<T, String> {
    let Some(w) = who else {
        let ask = Ask {
            to: To::Inline(
                std::cell::RefCell::new(&mut serve),
                std::cell::Cell::new(None),
            ),
        };
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f(Owned { who: None }, &ask)
        }));
        if let To::Inline(_, panicked) = &ask.to
            && let Some(p) = panicked.take()
        {
            std::panic::resume_unwind(p);
        }
        return done.map_err(|_| "the work done as the daemon's own user panicked".to_string());
    };
    std::thread::scope(|s| {
        let (tx, questions) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("as-owner".into())
            // It walks and removes trees the task made (a margin: see BIG_STACK).
            .stack_size(crate::sys::BIG_STACK)
            .spawn_scoped(s, move || {
                become_owner(w)?;
                let ask = Ask { to: To::Thread(tx) };
                Ok(f(Owned { who }, &ask))
            })
            .map_err(|e| format!("cannot start a thread to act as the task's owner: {e}"))?;
        // Ends when the worker drops its sender (it returned or failed).
        for (q, reply) in questions {
            let _ = reply.send(serve(q));
        }
        worker
            .join()
            .map_err(|_| "the thread acting as the task's owner panicked".to_string())?
    })
}

/// Capabilities the owner's thread keeps in its effective set: only those
/// that let a child it forks drop to the owner for good (setgroups, setgid,
/// setuid in [`Owned::command`]'s `pre_exec`), and kill, so that a deadline
/// can end that child once it runs as the owner (a watchdog thread started
/// here has this thread's capabilities).
const KEPT_CAPS: u32 = (1 << CAP_KILL) | (1 << CAP_SETGID) | (1 << CAP_SETUID);

/// Capability numbers (linux/capability.h).
const CAP_KILL: u32 = 5;
const CAP_SETGID: u32 = 6;
const CAP_SETUID: u32 = 7;

/// Makes the calling thread act as `who` on the filesystem: supplementary
/// groups, fsgid, fsuid, and an effective capability set of only
/// [`KEPT_CAPS`]. Checked after: an error if any did not take. Call it only
/// on a thread that ends when the owner's work does.
pub fn become_owner(who: &RunAs) -> Result<(), String> {
    let mut groups: Vec<libc::gid_t> = who.groups.clone();
    if groups.is_empty() {
        groups.push(who.gid);
    }
    let fail = |what: &str| {
        format!(
            "cannot act as user {} (uid {}): {what}: {}",
            who.name,
            who.uid,
            std::io::Error::last_os_error()
        )
    };
    // SAFETY: raw system calls on live buffers; they change only the
    // calling thread's credentials.
    unsafe {
        if libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) != 0 {
            return Err(fail("setgroups"));
        }
        libc::syscall(libc::SYS_setfsgid, who.gid);
        libc::syscall(libc::SYS_setfsuid, who.uid);
        // setfs*id never report failure; an invalid id (-1) changes nothing
        // and returns the current one.
        let fsgid = libc::syscall(libc::SYS_setfsgid, u32::MAX) as u32;
        let fsuid = libc::syscall(libc::SYS_setfsuid, u32::MAX) as u32;
        if fsgid != who.gid || fsuid != who.uid {
            return Err(format!(
                "cannot act as user {} (uid {}): the filesystem ids did not change (fsuid {fsuid}, fsgid {fsgid})",
                who.name, who.uid
            ));
        }
    }
    drop_caps().map_err(|e| fail(&e))
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAP_V3: u32 = 0x2008_0522;

/// Clears every effective capability of the calling thread but
/// [`KEPT_CAPS`] (and every one past the first word).
fn drop_caps() -> Result<(), String> {
    let mut head = CapHeader {
        version: CAP_V3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget/capset on the calling thread with version-3 buffers.
    unsafe {
        if libc::syscall(libc::SYS_capget, &mut head, data.as_mut_ptr()) != 0 {
            return Err("capget".into());
        }
        data[0].effective &= KEPT_CAPS;
        data[1].effective = 0;
        if libc::syscall(libc::SYS_capset, &mut head, data.as_ptr()) != 0 {
            return Err("capset".into());
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "thread_tests.rs"]
mod tests;
