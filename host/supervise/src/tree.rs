//! A run's process tree as the supervisor stops it: every process of the
//! run signalled (its container through the runtime, its group, its
//! cgroup, every descendant), and whether any is left.

use std::path::{Path, PathBuf};

use super::note;
use crate::cgroup;
use crate::files::RunSpec;
use crate::sys;

/// Every process of a run: its group, its cgroup where there is one, and
/// its container.
pub(super) struct Tree<'a> {
    pub(super) pgid: i32,
    pub(super) cgroup: Option<PathBuf>,
    /// The run's container, signalled through its runtime first (once per signal).
    pub(super) container: Option<Held<'a>>,
}

/// A container the run started, and the signals already sent to it.
pub(super) struct Held<'a> {
    pub(super) spec: &'a RunSpec,
    pub(super) control: &'a crate::container::Control,
    pub(super) dir: &'a Path,
    pub(super) sent: std::cell::RefCell<Vec<i32>>,
}

impl Held<'_> {
    pub(super) fn signal(&self, sig: i32) {
        if self.sent.borrow().contains(&sig) {
            return;
        }
        self.sent.borrow_mut().push(sig);
        let argv = self.control.kill_argv(sig);
        // The container may have ended already: a failure is only noted.
        if let Err(e) =
            crate::container::Control::call(&argv, &self.spec.env, self.spec.run_as.as_ref())
        {
            note(self.dir, &format!("container signal {sig}: {e}"));
        }
    }

    /// Removes the container (a podman client killed before its `--rm`
    /// cleanup leaves it behind; a docker one always outlives its client).
    pub(super) fn remove(&self) {
        let argv = self.control.rm_argv();
        for attempt in 0..2 {
            match crate::container::Control::call(&argv, &self.spec.env, self.spec.run_as.as_ref())
            {
                Ok(()) => return,
                Err(e) => {
                    let lower = e.to_ascii_lowercase();
                    if lower.contains("no such container") || lower.contains("no container with") {
                        return;
                    }
                    if attempt == 1 {
                        note(
                            self.dir,
                            &format!("cannot remove container {}: {e}", self.control.name),
                        );
                    }
                }
            }
        }
    }
}

impl Tree<'_> {
    /// Signals every process of the run: its container (through the
    /// runtime), its group, its cgroup, and every descendant of the
    /// supervisor (orphans are re-parented to us).
    pub(super) fn signal(&self, sig: i32) {
        if let Some(c) = &self.container {
            c.signal(sig);
        }
        sys::killpg(self.pgid, sig);
        if let Some(cg) = &self.cgroup {
            if sig == libc::SIGKILL {
                cgroup::kill_all(cg);
            } else {
                cgroup::procs(cg)
                    .into_iter()
                    .for_each(|p| sys::kill(p, sig));
            }
        }
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        sys::descendants(me)
            .into_iter()
            .for_each(|p| sys::kill(p, sig));
    }

    /// True while any process of the run is left. As subreaper we are the
    /// parent of every orphan, so "no children" means "no descendants".
    pub(super) fn alive(&self) -> bool {
        sys::has_children()
            || self
                .cgroup
                .as_deref()
                .is_some_and(|cg| !cgroup::procs(cg).is_empty())
    }
}
