//! Taking a task's owner's identity. A root supervisor stays root (it signals
//! the tree and writes the run's logs in the root-only state dir); the task
//! drops to its owner for good between fork and exec ([`Become::apply`]), and
//! what the supervisor makes on the owner's behalf (the output folder) is
//! made with the owner's effective ids ([`as_user`]), so the kernel checks
//! it exactly as it would check the owner.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::files::RunAs;

/// Which step of the drop failed (sent from the child to the supervisor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    /// setgroups.
    Groups = 1,
    /// setgid.
    Gid = 2,
    /// setuid.
    Uid = 3,
    /// setuid(0) succeeded after the drop: root was not left behind.
    StillRoot = 4,
    /// chdir into the workdir, as the user.
    Chdir = 5,
}

impl Step {
    /// The step a byte from the child names.
    pub fn from_byte(b: u8) -> Option<Step> {
        [
            Step::Groups,
            Step::Gid,
            Step::Uid,
            Step::StillRoot,
            Step::Chdir,
        ]
        .into_iter()
        .find(|s| *s as u8 == b)
    }
}

/// Everything the child needs to drop to the owner, prepared before the
/// fork (the child may only make async-signal-safe calls, so no allocation).
pub struct Become {
    uid: libc::uid_t,
    gid: libc::gid_t,
    groups: Vec<libc::gid_t>,
    workdir: CString,
}

impl Become {
    /// Prepares the drop to `r`, ending in `workdir`.
    pub fn new(r: &RunAs, workdir: &Path) -> Result<Become, String> {
        let workdir = CString::new(workdir.as_os_str().as_bytes())
            .map_err(|_| format!("workdir {} holds a NUL byte", workdir.display()))?;
        let mut groups = r.groups.clone();
        if groups.is_empty() {
            groups.push(r.gid);
        }
        Ok(Become {
            uid: r.uid,
            gid: r.gid,
            groups,
            workdir,
        })
    }

    /// In the forked child: supplementary groups, gid, uid (real, effective
    /// and saved: no way back, which is checked), then the workdir entered
    /// as the user. On failure: the step and the OS error.
    ///
    /// # Safety
    /// Only async-signal-safe calls on memory prepared before the fork; call
    /// it in a `pre_exec` closure only.
    pub unsafe fn apply(&self) -> Result<(), (Step, std::io::Error)> {
        let err = std::io::Error::last_os_error;
        // SAFETY: plain system calls on owned, live buffers.
        unsafe {
            if libc::setgroups(self.groups.len(), self.groups.as_ptr()) != 0 {
                return Err((Step::Groups, err()));
            }
            if libc::setgid(self.gid) != 0 {
                return Err((Step::Gid, err()));
            }
            if libc::setuid(self.uid) != 0 {
                return Err((Step::Uid, err()));
            }
            if self.uid != 0 && (libc::setuid(0) == 0 || libc::geteuid() == 0) {
                return Err((Step::StillRoot, std::io::Error::from_raw_os_error(0)));
            }
            if libc::chdir(self.workdir.as_ptr()) != 0 {
                return Err((Step::Chdir, err()));
            }
        }
        Ok(())
    }
}

/// The message for a drop that failed at `step`.
pub fn drop_error(r: &RunAs, workdir: &Path, step: Step, e: &std::io::Error) -> String {
    let who = format!("{} (uid {})", r.name, r.uid);
    match step {
        Step::Chdir => format!(
            "user {who} cannot enter the workdir {}: {e}; the task runs as its owner, so the folder must be theirs to enter",
            workdir.display()
        ),
        Step::Groups => format!("cannot set the groups of user {who}: {e}"),
        Step::Gid => format!("cannot take group {} of user {who}: {e}", r.gid),
        Step::Uid => format!("cannot become user {who}: {e}"),
        Step::StillRoot => {
            format!("refused to start: after becoming user {who} the task could still regain root")
        }
    }
}

/// Runs `f` with `r`'s effective uid, gid and groups, then takes root's back.
/// The process must be single-threaded (the supervisor before it spawns
/// its log readers); real and saved ids stay root, so the way back is open.
pub fn as_user<T>(r: &RunAs, f: impl FnOnce() -> T) -> Result<T, String> {
    let who = format!("{} (uid {})", r.name, r.uid);
    let groups_before =
        current_groups().map_err(|e| format!("read the supervisor's groups: {e}"))?;
    // SAFETY: geteuid and getegid have no preconditions.
    let saved = (
        unsafe { libc::geteuid() },
        unsafe { libc::getegid() },
        groups_before,
    );
    let mut groups = r.groups.clone();
    if groups.is_empty() {
        groups.push(r.gid);
    }
    let keep = u32::MAX; // -1: leave that id as it is
    // SAFETY: plain system calls on live buffers.
    unsafe {
        if libc::setgroups(groups.len(), groups.as_ptr()) != 0 {
            return Err(format!(
                "cannot set the groups of user {who}: {}",
                std::io::Error::last_os_error()
            ));
        }
        if libc::setresgid(keep, r.gid, keep) != 0 || libc::setresuid(keep, r.uid, keep) != 0 {
            let e = std::io::Error::last_os_error();
            restore(&saved)?;
            return Err(format!("cannot act as user {who}: {e}"));
        }
    }
    let out = f();
    restore(&saved)?;
    Ok(out)
}

/// Takes back the supervisor's effective uid, gid and groups.
fn restore(saved: &(libc::uid_t, libc::gid_t, Vec<libc::gid_t>)) -> Result<(), String> {
    let keep = u32::MAX;
    let (uid, gid, groups) = saved;
    // SAFETY: plain system calls on a live buffer.
    let ok = unsafe {
        libc::setresuid(keep, *uid, keep) == 0
            && libc::setresgid(keep, *gid, keep) == 0
            && libc::setgroups(groups.len(), groups.as_ptr()) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "cannot take back the supervisor's identity: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// This process's supplementary groups.
fn current_groups() -> std::io::Result<Vec<libc::gid_t>> {
    // SAFETY: getgroups(0, null) returns the count; then fills at most `n`.
    unsafe {
        let n = libc::getgroups(0, std::ptr::null_mut());
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut v = vec![0 as libc::gid_t; n as usize];
        let got = libc::getgroups(n, v.as_mut_ptr());
        if got < 0 {
            return Err(std::io::Error::last_os_error());
        }
        v.truncate(got as usize);
        Ok(v)
    }
}
