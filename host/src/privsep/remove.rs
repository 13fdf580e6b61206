//! Removing a folder a task made, whatever shape it has: iteratively (a
//! task can build a tree a million levels deep; a recursive removal
//! overflows its thread's stack, and the daemon dies at every gc after),
//! relative to descriptors (no name is resolved again from the top), with
//! a bounded number of them open at once (a deep tree must not exhaust the
//! daemon's descriptors), never following a symbolic link.
//!
//! Going down, each folder is opened `O_NOFOLLOW | O_DIRECTORY` relative to
//! its parent's descriptor. Only the [`OPEN_LEVELS`] deepest levels keep
//! theirs; going back up past them, the parent is opened again as `..` of
//! the child's descriptor and must be the same folder (device and inode)
//! that was left: a folder moved meanwhile stops the removal with an
//! error, and nothing outside the tree is touched. Nor is anything mounted
//! inside it (another file system, or a bind mount of the same one: the
//! mount id differs): the removal stops there.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, MetadataExt, ReadDir};

/// Folder levels whose descriptors stay open during a removal (each holds
/// two: the folder's and its listing's).
pub const OPEN_LEVELS: usize = 32;

/// One folder on the way down.
struct Level {
    /// Its descriptor, while it is among the deepest [`OPEN_LEVELS`].
    dir: Option<Dir>,
    /// Its listing, read as entries are removed.
    entries: Option<ReadDir>,
    /// Its identity, checked when it is opened again from below.
    id: (u64, u64),
    /// Its mount (`statx`'s mount id; `None` before Linux 5.8: the device
    /// alone is compared).
    mount: Option<u64>,
    /// Its name in its parent.
    name: OsString,
}

/// Removes `name` in `parent` and everything under it. A file or a
/// symbolic link there is removed itself (a link is never followed);
/// nothing there is fine. Errors name the path (relative to `parent`)
/// that could not be removed; what was removed before stays removed.
pub fn remove_tree(parent: &Dir, name: &Path) -> std::io::Result<()> {
    let top = match open_child(parent, name.as_os_str()) {
        Ok(Some(dir)) => dir,
        Ok(None) => {
            return match parent.remove_file(name) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            };
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut stack = vec![level(top, name.as_os_str().to_owned())?];
    loop {
        let Some(next) = next_entry(&mut stack)? else {
            // The deepest folder is empty: remove it from its parent.
            let done = stack.pop().expect("the stack is not empty here");
            let Some(up) = stack.len().checked_sub(1) else {
                return parent.remove_dir(name).map_err(|e| at(&[], name, e));
            };
            if stack[up].dir.is_none()
                && let Err(e) = reopen_parent(&done, &mut stack[up])
            {
                return Err(at(&stack, Path::new(""), e));
            }
            let dir = stack[up].dir.as_ref().expect("reopened above");
            if let Err(e) = dir.remove_dir(&done.name) {
                return Err(at(&stack, Path::new(&done.name), e));
            }
            continue;
        };
        let here = stack
            .last()
            .and_then(|l| l.dir.as_ref())
            .expect("the deepest level is open");
        match open_child(here, &next) {
            Ok(Some(child)) => {
                let child = level(child, next)?;
                if child.id.0 != stack[0].id.0 || child.mount != stack[0].mount {
                    let e = std::io::Error::other(
                        "another file system is mounted there; it is not removed, nor is what holds it",
                    );
                    return Err(at(&stack, Path::new(&child.name), e));
                }
                stack.push(child);
                let deep = stack.len();
                if deep > OPEN_LEVELS {
                    let far = &mut stack[deep - OPEN_LEVELS - 1];
                    far.entries = None;
                    far.dir = None;
                }
            }
            Ok(None) => match here.remove_file(&next) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(at(&stack, Path::new(&next), e));
                }
                _ => {}
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(at(&stack, Path::new(&next), e)),
        }
    }
}

/// The next name in the deepest folder (its listing started, or started
/// again when it was closed), or `None` when it is empty.
fn next_entry(stack: &mut [Level]) -> std::io::Result<Option<OsString>> {
    let Some(deepest) = stack.last_mut() else {
        return Ok(None);
    };
    let dir = deepest
        .dir
        .as_ref()
        .expect("the deepest level is always open");
    let entries = match &mut deepest.entries {
        Some(e) => e,
        slot => slot.insert(dir.entries()?),
    };
    match entries.next() {
        None => Ok(None),
        Some(Ok(entry)) => Ok(Some(entry.file_name())),
        Some(Err(e)) => Err(e),
    }
}

/// A level for the folder `dir`, named `name` in its parent.
fn level(dir: Dir, name: OsString) -> std::io::Result<Level> {
    let meta = dir.dir_metadata()?;
    let mount = mount_id(&dir);
    Ok(Level {
        dir: Some(dir),
        entries: None,
        id: (meta.dev(), meta.ino()),
        mount,
        name,
    })
}

/// The mount id of the folder `dir` (a bind mount of the same file system
/// has the same device but a mount of its own).
fn mount_id(dir: &Dir) -> Option<u64> {
    // SAFETY: statx on a live descriptor with an empty NUL-terminated
    // path into a zeroed buffer of the right type.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: as above: the descriptor is live for the call, the path a
    // static empty C string, the buffer a statx of our own.
    let r = unsafe {
        libc::statx(
            dir.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_MNT_ID,
            &mut stx,
        )
    };
    (r == 0 && stx.stx_mask & libc::STATX_MNT_ID != 0).then_some(stx.stx_mnt_id)
}

/// `name` in `dir` opened as a folder, or `None` when it is something else
/// (a file, a symbolic link: it is removed as a name, not followed).
fn open_child(dir: &Dir, name: &OsStr) -> std::io::Result<Option<Dir>> {
    let c = std::ffi::CString::new(name.as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: openat on a live descriptor with a NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOTDIR) | Some(libc::ELOOP) => Ok(None),
            _ => Err(e),
        };
    }
    // SAFETY: a descriptor just opened, owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(Some(Dir::from_std_file(std::fs::File::from(owned))))
}

/// Opens `up` again as `..` of `below` (whose descriptor is open), refusing
/// a folder that is not the one left on the way down.
fn reopen_parent(below: &Level, up: &mut Level) -> std::io::Result<()> {
    let child = below.dir.as_ref().expect("a level being removed is open");
    let c = c"..";
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: openat on a live descriptor with a NUL-terminated name.
    let fd = unsafe { libc::openat(child.as_raw_fd(), c.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let dir = Dir::from_std_file(std::fs::File::from(owned));
    let meta = dir.dir_metadata()?;
    if (meta.dev(), meta.ino()) != up.id {
        return Err(std::io::Error::other(
            "the folder was moved while it was being removed; the rest is kept",
        ));
    }
    up.dir = Some(dir);
    up.entries = None;
    Ok(())
}

/// `err` on `leaf` under the folders of `stack`, with the path named.
fn at(stack: &[Level], leaf: &Path, err: std::io::Error) -> std::io::Error {
    let mut path: PathBuf = stack.iter().map(|l| Path::new(&l.name)).collect();
    path.push(leaf);
    let shown = path.display().to_string();
    let shown = match shown.len() {
        n if n > 200 => {
            let cut = (n - 160..n)
                .find(|&i| shown.is_char_boundary(i))
                .unwrap_or(n);
            format!("…{}", &shown[cut..])
        }
        _ => shown,
    };
    std::io::Error::new(err.kind(), format!("cannot remove {shown}: {err}"))
}

#[cfg(test)]
#[path = "remove_tests.rs"]
mod tests;
