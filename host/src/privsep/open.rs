//! Opening a user's file for reading: never by a path checked first and
//! opened again, and never unless the open descriptor says it is a regular
//! file. Opened non-blocking (a FIFO or a device cannot hold the daemon at
//! the open), without following a final symbolic link, then `fstat`.
//!
//! Every path a user names is resolved with `openat2` and
//! `RESOLVE_NO_MAGICLINKS`: an owner's thread lives in the daemon's
//! process, so `/proc/self/fd/N` (the daemon's own open folders, another
//! owner's among them), `/proc/self/cwd` and the like would lead past the
//! permissions of every folder above them. Ordinary symbolic links are
//! followed as the owner would follow them.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a path is when it is not a regular file, as manifests name it.
pub fn kind_of(ft: &std::fs::FileType) -> &'static str {
    if ft.is_file() {
        "file"
    } else if ft.is_dir() {
        "folder"
    } else if ft.is_symlink() {
        "symlink"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_char_device() {
        "char-device"
    } else if ft.is_block_device() {
        "block-device"
    } else if ft.is_socket() {
        "socket"
    } else {
        "other"
    }
}

/// Why a file was not opened for reading.
#[derive(Debug)]
pub enum Refused {
    /// It could not be opened (missing, no permission, a final symlink:
    /// `ELOOP`).
    Io(std::io::Error),
    /// It is there but is not a regular file (its kind).
    NotRegular(&'static str),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Io(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                f.write_str("a symbolic link (not followed)")
            }
            Refused::Io(e) => write!(f, "{e}"),
            Refused::NotRegular(k) => write!(f, "a {k}, not a regular file: not read"),
        }
    }
}

/// `path` opened with `flags` (`O_CLOEXEC` added), no magic link on its
/// way (see the module's doc). A kernel before 5.6 (no `openat2`) opens it
/// plainly.
pub fn open_no_magic(path: &Path, flags: libc::c_int) -> std::io::Result<File> {
    use std::os::fd::FromRawFd;
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // libc's `open_how` is non-exhaustive: the kernel's layout, ours.
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: openat2 with a NUL-terminated path and a live `open_how` of
    // the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    } as libc::c_int;
    if fd >= 0 {
        // SAFETY: a fresh descriptor nothing else owns.
        return Ok(unsafe { File::from_raw_fd(fd) });
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::ENOSYS) {
        return Err(e);
    }
    File::options()
        .read(flags & libc::O_ACCMODE == libc::O_RDONLY)
        .custom_flags(flags & !libc::O_ACCMODE)
        .open(path)
}

/// What `path` is (following ordinary links when `follow`, never a magic
/// one), from a descriptor opened `O_PATH` (nothing is read; a FIFO or a
/// device is not opened).
pub fn metadata(path: &Path, follow: bool) -> std::io::Result<std::fs::Metadata> {
    let mut flags = libc::O_PATH;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    open_no_magic(path, flags)?.metadata()
}

/// The folder at `path`, opened for listing (no magic link on its way).
pub fn dir(path: &Path) -> std::io::Result<cap_std::fs::Dir> {
    let f = open_no_magic(path, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOCTTY)?;
    Ok(cap_std::fs::Dir::from_std_file(f))
}

/// The entries of the folder at `path` (opened with no magic link on its
/// way; each entry's type from the listing, nothing followed).
pub fn read_dir(path: &Path) -> std::io::Result<cap_std::fs::ReadDir> {
    dir(path)?.entries()
}

/// `path` opened for reading if it is a regular file, checked on the
/// descriptor. `follow`: whether a final symbolic link is followed (an
/// input may be a link the user made on purpose; output files never are).
pub fn regular(path: &Path, follow: bool) -> Result<(File, std::fs::Metadata), Refused> {
    let mut flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    let f = open_no_magic(path, flags).map_err(Refused::Io)?;
    let m = f.metadata().map_err(Refused::Io)?;
    if !m.is_file() {
        return Err(Refused::NotRegular(kind_of(&m.file_type())));
    }
    Ok((f, m))
}

/// The folder at the absolute path `path`, opened once by a walk from `/`
/// that follows no symbolic link in any component (each one opened
/// `O_PATH | O_NOFOLLOW | O_DIRECTORY` relative to the one before): the
/// descriptor is the real folder at that path at the moment of the walk,
/// whatever is renamed or swapped later. Only search permission is needed
/// on the folders above it (as for any path), read on the folder itself.
pub fn real_dir(path: &Path) -> Result<cap_std::fs::Dir, String> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::path::Component;
    let shown = path.display();
    let open_at = |at: libc::c_int, name: &std::ffi::CStr, flags: libc::c_int| {
        // SAFETY: openat on a live descriptor (or AT_FDCWD) and a
        // NUL-terminated name; the result is owned at once.
        let fd = unsafe { libc::openat(at, name.as_ptr(), flags | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            // SAFETY: a fresh descriptor nothing else owns.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    };
    let step = libc::O_PATH | libc::O_NOFOLLOW | libc::O_DIRECTORY;
    let mut comps = path.components();
    if comps.next() != Some(Component::RootDir) {
        return Err(format!("{shown} is not an absolute path"));
    }
    let mut at = open_at(libc::AT_FDCWD, c"/", step).map_err(|e| format!("/: {e}"))?;
    let mut walked = std::path::PathBuf::from("/");
    for c in comps {
        let Component::Normal(name) = c else {
            return Err(format!(
                "{shown} holds `.` or `..`: give the folder by its plain path"
            ));
        };
        walked.push(name);
        let cname = std::ffi::CString::new(name.as_encoded_bytes())
            .map_err(|_| format!("{shown} holds a NUL byte"))?;
        at = open_at(at.as_raw_fd(), &cname, step).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => match std::fs::symlink_metadata(&walked) {
                Ok(m) if m.file_type().is_symlink() => format!(
                    "{shown} is reached through a symbolic link ({}); only a real folder is read",
                    walked.display()
                ),
                _ => format!("{} is not a folder", walked.display()),
            },
            _ => format!("{}: {e}", walked.display()),
        })?;
    }
    let dir = open_at(
        at.as_raw_fd(),
        c".",
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOCTTY,
    )
    .map_err(|e| format!("cannot open {shown}: {e}"))?;
    Ok(cap_std::fs::Dir::from_std_file(std::fs::File::from(dir)))
}

/// Whether `who` may read a file of `mode`, `uid` and `gid` by its mode bits
/// alone (owner, group, other; no ACL). Only the fallback of
/// [`super::access::ReadCheck`] on kernels without `faccessat2` (before
/// 5.8); elsewhere the kernel is asked as the owner.
pub fn may_read(mode: u32, uid: u32, gid: u32, who: &crate::sandbox::files::RunAs) -> bool {
    if uid == who.uid {
        mode & 0o400 != 0
    } else if gid == who.gid || who.groups.contains(&gid) {
        mode & 0o040 != 0
    } else {
        mode & 0o004 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_named_and_never_blocks_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pipe");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = regular(&p, true).expect_err("a FIFO was opened");
        assert!(matches!(e, Refused::NotRegular("fifo")), "{e:?}");
        assert!(matches!(
            regular(Path::new("/dev/zero"), true),
            Err(Refused::NotRegular("char-device"))
        ));
        assert!(matches!(
            regular(dir.path(), true),
            Err(Refused::NotRegular("folder"))
        ));
    }

    #[test]
    fn a_final_symlink_is_followed_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real"), "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("real"), &link).unwrap();
        assert!(regular(&link, true).is_ok());
        let e = regular(&link, false).expect_err("followed a link");
        assert_eq!(e.to_string(), "a symbolic link (not followed)");
    }

    #[test]
    fn a_link_through_proc_self_is_refused_and_an_ordinary_one_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real"), "x").unwrap();
        let held = std::fs::File::open(dir.path()).unwrap();
        use std::os::fd::AsRawFd;
        let magic = std::path::PathBuf::from(format!("/proc/self/fd/{}/real", held.as_raw_fd()));
        assert!(
            std::fs::metadata(&magic).is_ok(),
            "the kernel follows it by default"
        );
        let link = dir.path().join("via-proc");
        std::os::unix::fs::symlink(&magic, &link).unwrap();
        for p in [&magic, &link] {
            let e = metadata(p, true).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{}", p.display());
            assert!(regular(p, true).is_err());
        }
        assert!(metadata(&dir.path().join("real"), true).unwrap().is_file());
        let plain = dir.path().join("plain");
        std::os::unix::fs::symlink(dir.path().join("real"), &plain).unwrap();
        assert!(regular(&plain, true).is_ok());
        assert!(matches!(
            metadata(Path::new("/dev/zero"), true).map(|m| m.file_type()),
            Ok(t) if kind_of(&t) == "char-device"
        ));
    }

    #[test]
    fn a_real_dir_is_opened_and_a_link_on_its_way_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("x/etc")).unwrap();
        std::fs::write(base.join("x/etc/f"), "mine").unwrap();
        let d = real_dir(&base.join("x/etc")).unwrap();
        assert_eq!(d.read_to_string("f").unwrap(), "mine");
        // x swapped for a link to /: the walk refuses, naming the link.
        std::fs::rename(base.join("x"), base.join("y")).unwrap();
        std::os::unix::fs::symlink("/", base.join("x")).unwrap();
        let e = real_dir(&base.join("x/etc")).unwrap_err();
        assert!(
            e.contains("reached through a symbolic link") && e.contains("/x)"),
            "{e}"
        );
        // The descriptor opened before the swap still holds the real folder.
        assert_eq!(d.read_to_string("f").unwrap(), "mine");
        assert!(
            real_dir(&base.join("y/etc/f"))
                .unwrap_err()
                .contains("is not a folder")
        );
        assert!(
            real_dir(Path::new("rel"))
                .unwrap_err()
                .contains("not an absolute")
        );
        assert!(real_dir(&base.join("y/../y")).unwrap_err().contains("`..`"));
    }
}
