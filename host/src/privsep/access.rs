//! Asking the kernel whether a task's owner may read a file the daemon
//! holds open. Mode bits alone are not the answer (a POSIX ACL can grant or
//! deny past them; an LSM can too), so the question goes to a thread acting
//! as the owner ([`super::become_owner`]), which asks the kernel about the
//! open descriptor itself: `faccessat2(fd, "", R_OK, AT_EMPTY_PATH |
//! AT_EACCESS)`, checked with that thread's filesystem identity and no
//! override capability. Nothing is resolved by name: the file is the one
//! already open. A kernel without `faccessat2` (before 5.8) gets the mode
//! bits ([`super::open::may_read`]), and so does one where a seccomp filter
//! refuses the call.

use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::sync::mpsc;

use crate::sandbox::files::RunAs;

/// A question to the owner's thread: a descriptor, and where to answer.
type Question = (RawFd, mpsc::SyncSender<Result<bool, String>>);

/// Asks the owner's thread about open files (see the module's doc).
pub struct ReadCheck<'a> {
    who: Option<&'a RunAs>,
    tx: Option<mpsc::Sender<Question>>,
}

impl ReadCheck<'_> {
    /// Whether the owner may read `file`: always when the daemon acts as
    /// itself (no owner to ask about).
    pub fn may_read(&self, file: &impl AsFd) -> Result<bool, String> {
        let Some(tx) = &self.tx else { return Ok(true) };
        let fd = file.as_fd().as_raw_fd();
        let (reply, answer) = mpsc::sync_channel(1);
        tx.send((fd, reply))
            .map_err(|_| "the thread acting as the task's owner is gone".to_string())?;
        // The descriptor stays open: `file` is borrowed until the answer.
        let got = answer
            .recv()
            .map_err(|_| "the thread acting as the task's owner is gone".to_string())?;
        match got {
            Err(e) if e == NO_FACCESSAT2 => {
                let meta = std::fs::File::from(
                    file.as_fd()
                        .try_clone_to_owned()
                        .map_err(|e| e.to_string())?,
                )
                .metadata()
                .map_err(|e| e.to_string())?;
                let who = self.who.expect("a check with a thread has an owner");
                Ok(super::open::may_read(
                    meta.mode(),
                    meta.uid(),
                    meta.gid(),
                    who,
                ))
            }
            other => other,
        }
    }
}

const NO_FACCESSAT2: &str = "faccessat2 is not available";

/// Runs `f` on the calling thread with a [`ReadCheck`] whose questions a
/// thread acting as `who` answers; `None`: the daemon's own files, every
/// answer yes.
pub fn with_read_check<T>(
    who: Option<&RunAs>,
    f: impl FnOnce(&ReadCheck<'_>) -> T,
) -> Result<T, String> {
    let Some(owner) = who else {
        return Ok(f(&ReadCheck {
            who: None,
            tx: None,
        }));
    };
    std::thread::scope(|s| {
        let (tx, questions) = mpsc::channel::<Question>();
        let (ready_tx, ready) = mpsc::sync_channel(1);
        let worker = std::thread::Builder::new()
            .name("as-owner-access".into())
            .spawn_scoped(s, move || {
                if let Err(e) = super::become_owner(owner) {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
                let _ = ready_tx.send(Ok(()));
                for (fd, reply) in questions {
                    let _ = reply.send(readable(fd));
                }
            })
            .map_err(|e| format!("cannot start a thread to act as the task's owner: {e}"))?;
        let started = ready
            .recv()
            .map_err(|_| "the thread acting as the task's owner ended".to_string())
            .and_then(|r| r);
        let out = started.map(|()| {
            let check = ReadCheck {
                who: Some(owner),
                tx: Some(tx),
            };
            f(&check)
            // `check` (the only sender) drops here: the worker's loop ends.
        });
        worker
            .join()
            .map_err(|_| "the thread acting as the task's owner panicked".to_string())?;
        out
    })
}

/// The kernel's answer for the calling thread's identity about `fd`.
fn readable(fd: RawFd) -> Result<bool, String> {
    // SAFETY: faccessat2 on a descriptor the asker keeps open, an empty
    // NUL-terminated path; no memory is written.
    let r = unsafe {
        libc::syscall(
            libc::SYS_faccessat2,
            fd,
            c"".as_ptr(),
            libc::R_OK,
            libc::AT_EMPTY_PATH | libc::AT_EACCESS,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EACCES) => Ok(false),
        // ENOSYS: before Linux 5.8; EPERM: a seccomp filter refusing the
        // call itself (a permission answer is EACCES). The mode bits decide.
        Some(libc::ENOSYS) | Some(libc::EINVAL) | Some(libc::EPERM) => Err(NO_FACCESSAT2.into()),
        _ => Err(format!("cannot ask whether the file may be read: {e}")),
    }
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
