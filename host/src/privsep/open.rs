//! Opening a user's file for reading: never by a path checked first and
//! opened again, and never unless the open descriptor says it is a regular
//! file. Opened non-blocking (a FIFO or a device cannot hold the daemon at
//! the open), without following a final symbolic link, then `fstat`.

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

/// `path` opened for reading if it is a regular file, checked on the
/// descriptor. `follow`: whether a final symbolic link is followed (an
/// input may be a link the user made on purpose; output files never are).
pub fn regular(path: &Path, follow: bool) -> Result<(File, std::fs::Metadata), Refused> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    let f = File::options()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(Refused::Io)?;
    let m = f.metadata().map_err(Refused::Io)?;
    if !m.is_file() {
        return Err(Refused::NotRegular(kind_of(&m.file_type())));
    }
    Ok((f, m))
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
}
