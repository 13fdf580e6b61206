//! Opening a file of a run folder whose contents another user may control
//! (under SLURM with `job_user = "owner"`, the task's owner runs the
//! supervisor and owns its run folder), so that a daemon running as root
//! reads that file and nothing else.

use std::fs::File;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading if it is a plain file of its folder: never
/// through a symbolic link as its last part (`O_NOFOLLOW`: the folder
/// above it is the daemon's, so no earlier part can be swapped), never
/// blocking on a FIFO or a device (`O_NONBLOCK`, then only a regular file
/// is kept), and never a second name of another file (one link only: a
/// hard link to a file its maker cannot read, `/etc/shadow`, has two).
/// An error of kind `InvalidData` names what it was instead.
pub fn open(path: &Path) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW on a symbolic link.
            Some(libc::ELOOP) => io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is a symbolic link, not read", path.display()),
            ),
            _ => e,
        })?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a plain file, not read", path.display()),
        ));
    }
    if m.nlink() != 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} has {} names (a hard link), not read",
                path.display(),
                m.nlink()
            ),
        ));
    }
    Ok(f)
}

/// Reads the whole plain file at `path` ([`open`]), at most `max` bytes
/// (more is an error of kind `InvalidData`).
pub fn read(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    open(path)?
        .take(max.saturating_add(1))
        .read_to_end(&mut out)?;
    if out.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is over {max} bytes, not read", path.display()),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_file_is_read_and_a_link_fifo_folder_or_second_name_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let secret = d.path().join("secret");
        std::fs::write(&secret, b"root only").unwrap();
        let plain = d.path().join("status.json");
        std::fs::write(&plain, b"{}").unwrap();
        assert_eq!(read(&plain, 10).unwrap(), b"{}");

        let link = d.path().join("link");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let e = open(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");

        let hard = d.path().join("hard");
        std::fs::hard_link(&secret, &hard).unwrap();
        let e = open(&hard).unwrap_err();
        assert!(e.to_string().contains("hard link"), "{e}");

        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a plain file"), "{e}");

        let e = open(d.path()).unwrap_err();
        assert!(e.to_string().contains("not a plain file"), "{e}");

        let e = read(&plain, 1).unwrap_err();
        assert!(e.to_string().contains("over 1 bytes"), "{e}");
        assert_eq!(
            open(&d.path().join("none")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
