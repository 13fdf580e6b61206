//! The privilege boundary. A system daemon runs as root; its users' files
//! (workdirs, inputs, output folders, checkpoints, venvs, validator and
//! policy files they name) are theirs to change at any instant, including
//! between a check and a use. So the daemon's privileged part never
//! executes a program, follows a symbolic link or opens a path that a
//! task's owner can change. Everything on a user's paths happens in one of
//! two ways:
//!
//! - **as the owner**: on a thread of its own whose filesystem identity is
//!   the owner's ([`as_owner`]: fsuid, fsgid and supplementary groups, set
//!   with raw system calls so that only that thread changes, as knfsd and
//!   Samba do), so the kernel checks every open, stat and unlink exactly as
//!   it would check the owner's own, with root's file capabilities cleared
//!   from that thread; programs (git, pip) run in a child that drops to the
//!   owner for good before it executes ([`Owned::command`]);
//! - **through one descriptor opened once** and used relative to it from
//!   then on (cap-std's `Dir`, which resolves beneath the descriptor), with
//!   files read only when the open descriptor says they are regular files
//!   ([`open::regular`]).
//!
//! When the daemon runs as one user for itself (or the task's owner is
//! the daemon's own user), [`as_owner`] runs the same code on the calling
//! thread without changing anything: it is the same uid, and no thread is
//! started for it.

pub mod access;
pub mod open;
pub mod remove;
pub mod thread;

pub use thread::{Owned, as_owner, as_owner_serving, become_owner};

use crate::sandbox::files::RunAs;
use nightjar_core::task::model::Owner;

/// The identity work on `owner`'s files takes: `None` when the daemon is
/// not root or the owner is the daemon's own user (nothing to change).
/// An owner no longer in the user database is an error: nothing of theirs
/// is touched as root in their place.
pub fn identity(owner: Option<&Owner>) -> Result<Option<RunAs>, String> {
    let euid = crate::users::euid();
    let Some(owner) = owner.filter(|o| o.uid != euid) else {
        return Ok(None);
    };
    if euid != 0 {
        // A user's own daemon runs every task as that user.
        return Ok(None);
    }
    let Some(account) = crate::users::by_uid(owner.uid) else {
        return Err(format!(
            "the task's owner `{}` (uid {}) is no longer in the user database; nothing of theirs is read or run as root in their place",
            owner.name, owner.uid
        ));
    };
    Ok(Some(run_as(account)))
}

/// The identity of `account`: its ids and every group it is in.
pub fn run_as(account: crate::users::Account) -> RunAs {
    RunAs {
        uid: account.uid,
        gid: account.gid,
        groups: crate::users::groups_of(&account),
        name: account.name,
        home: account.home,
    }
}

/// The unprivileged account every Debian system has, for tests that act
/// as another user.
#[cfg(test)]
pub(crate) fn nobody() -> RunAs {
    RunAs {
        uid: 65534,
        gid: 65534,
        groups: vec![65534],
        name: "nobody".into(),
        home: "/nonexistent".into(),
    }
}
