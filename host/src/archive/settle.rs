//! What follows the copy into the archive's partial folder: the flush
//! (fsync of every file and folder written), the verification (each file
//! read back from the archive, past the page cache where the kernel
//! allows, against the hash taken while copying), and the rename that
//! never replaces.

use std::ffi::CString;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::Path;

use cap_std::fs::Dir;
use sha2::{Digest, Sha256};

use super::Failure;
use super::copy::{BUF, Written};
use nightjar_core::api::outputs::{ArchiveFailure, OutputFile};

/// fsync of every file and folder written, then of `dst` itself.
pub fn flush(dst: &Dir, w: &Written) -> Result<(), Failure> {
    for (f, at) in w.files.iter().zip(&w.at) {
        let file = dst
            .open(at)
            .map_err(|e| Failure::io(format!("cannot open {} to flush it", f.path), e))?;
        file.sync_all().map_err(|e| {
            Failure::io(format!("cannot flush {} to the archive's disk", f.path), e)
        })?;
    }
    for d in w.dirs.iter().rev() {
        let shown = d.display();
        let dir = dst
            .open_dir(d)
            .map_err(|e| Failure::io(format!("cannot open {shown} to flush it"), e))?;
        fsync_dir(&dir).map_err(|e| Failure::io(format!("cannot flush folder {shown}"), e))?;
    }
    fsync_dir(dst).map_err(|e| Failure::io("cannot flush the archive folder".into(), e))
}

/// fsync of a folder (its entries). A `Dir`'s own descriptor may be an
/// `O_PATH` one, which fsync refuses: the folder is opened again, read-only,
/// relative to it.
pub fn fsync_dir(dir: &Dir) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated literal, relative to the Dir's own descriptor.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c".".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was opened just above and is owned by nothing else: the
    // File closes it once, when dropped.
    let folder = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    folder.sync_all()
}

/// Reads every written file back and compares it with what was written.
pub fn verify(dst: &Dir, w: &Written) -> Result<(), Failure> {
    let mut buf = vec![0u8; BUF];
    for (f, at) in w.files.iter().zip(&w.at) {
        read_back(dst, at, f, &mut buf)?;
    }
    Ok(())
}

/// Reads file `at` of `dir` (at most one byte past its size) and compares
/// it with `f`'s size and hash.
pub fn read_back(dir: &Dir, at: &Path, f: &OutputFile, buf: &mut [u8]) -> Result<(), Failure> {
    let file = dir
        .open(at)
        .map_err(|e| Failure::io(format!("cannot open {} to verify it", f.path), e))?;
    // Ask the kernel to drop its cached pages, so the read comes from
    // the archive's disk (or server) where it can; advice only.
    // SAFETY: the descriptor is the File's own.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    let mut file = file.take(f.size.saturating_add(1));
    let mut h = Sha256::new();
    let mut size = 0u64;
    loop {
        let n = file
            .read(buf)
            .map_err(|e| Failure::io(format!("cannot read {} back", f.path), e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    let sha = format!("{:x}", h.finalize());
    if sha != f.sha256 || size != f.size {
        return Err(Failure::new(
            ArchiveFailure::Mismatch,
            format!(
                "{} read back differs from what was written ({} bytes, sha256 {} written; {size} bytes, sha256 {sha} read)",
                f.path, f.size, f.sha256
            ),
        ));
    }
    Ok(())
}

/// `rename(from, to)` inside `root` that fails with EEXIST instead of
/// replacing anything (renameat2 with RENAME_NOREPLACE).
pub fn rename_noreplace(from_dir: &Dir, from: &str, to_dir: &Dir, to: &str) -> std::io::Result<()> {
    let (Ok(f), Ok(t)) = (CString::new(from), CString::new(to)) else {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    };
    // SAFETY: both descriptors are open Dirs; both names are NUL-terminated single components.
    let r = unsafe {
        libc::renameat2(
            from_dir.as_raw_fd(),
            f.as_ptr(),
            to_dir.as_raw_fd(),
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
