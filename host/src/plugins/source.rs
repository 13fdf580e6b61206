//! Reading a plugin file: only a regular file (or a symlink to one), only up
//! to a size cap, checked on the open file itself so nothing swapped in
//! between the check and the read (a FIFO, a 2 GiB file) is ever read.

use std::fs::Metadata;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Why a plugin file was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// Nothing at that path.
    #[error("{0}: no such file")]
    Missing(String),
    /// Something that is not a regular file.
    #[error("{path}: {kind}: not a regular file; put the component (a .wasm file) there")]
    NotRegular {
        /// The path.
        path: String,
        /// What it really is ("FIFO", "folder", "dangling symlink", ...).
        kind: &'static str,
    },
    /// Larger than `plugins.max_file_size`.
    #[error(
        "{path}: {size} bytes, over plugins.max_file_size ({limit} bytes); raise the limit if the component is really that large"
    )]
    TooLarge {
        /// The path.
        path: String,
        /// Its size.
        size: u64,
        /// The cap.
        limit: u64,
    },
    /// Reading failed.
    #[error("{path}: {message}")]
    Io {
        /// The path.
        path: String,
        /// The system's words.
        message: String,
    },
}

/// What kind of thing `meta` describes, for messages.
fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        "regular file"
    } else if t.is_dir() {
        "folder"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else if t.is_symlink() {
        "symlink"
    } else {
        "special file"
    }
}

/// Checks what is at `path` without opening it: `Ok(false)` when nothing is
/// there, `Ok(true)` for a regular file (directly or through a symlink), and
/// the real kind otherwise.
pub fn check(path: &Path) -> Result<bool, SourceError> {
    let shown = path.display().to_string();
    // No magic link on the way (`/proc/self/...`): see `privsep::open`.
    let link = match crate::privsep::open::metadata(path, false) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(SourceError::Io {
                path: shown,
                message: e.to_string(),
            });
        }
    };
    let meta = if link.file_type().is_symlink() {
        match crate::privsep::open::metadata(path, true) {
            Ok(m) => m,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(SourceError::NotRegular {
                    path: shown,
                    kind: "symlink loop",
                });
            }
            Err(_) => {
                return Err(SourceError::NotRegular {
                    path: shown,
                    kind: "dangling symlink",
                });
            }
        }
    } else {
        link
    };
    if meta.file_type().is_file() {
        Ok(true)
    } else {
        Err(SourceError::NotRegular {
            path: shown,
            kind: kind(&meta),
        })
    }
}

/// Reads the component at `path`, refusing anything but a regular file of at
/// most `limit` bytes.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, SourceError> {
    let shown = path.display().to_string();
    if !check(path)? {
        return Err(SourceError::Missing(shown));
    }
    let io = |e: std::io::Error| SourceError::Io {
        path: shown.clone(),
        message: e.to_string(),
    };
    // Non-blocking: a FIFO swapped in after the check opens without a writer.
    let file = crate::privsep::open::open_no_magic(
        path,
        libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
    )
    .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(SourceError::NotRegular {
            path: shown,
            kind: kind(&meta),
        });
    }
    if meta.len() > limit {
        return Err(SourceError::TooLarge {
            path: shown,
            size: meta.len(),
            limit,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(SourceError::TooLarge {
            path: shown,
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_non_file_is_refused_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.wasm");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path that lives for the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let folder = dir.path().join("folder.wasm");
        std::fs::create_dir(&folder).unwrap();
        let dangling = dir.path().join("dangling.wasm");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        let looping = dir.path().join("loop.wasm");
        std::os::unix::fs::symlink(&looping, &looping).unwrap();
        for (path, kind) in [
            (&fifo, "FIFO"),
            (&folder, "folder"),
            (&dangling, "dangling symlink"),
            (&looping, "symlink loop"),
        ] {
            let e = read(path, 1 << 20).unwrap_err();
            assert!(
                matches!(&e, SourceError::NotRegular { kind: k, .. } if *k == kind),
                "{}: {e}",
                path.display()
            );
            assert!(e.to_string().contains(kind), "{e}");
        }
        let dev = read(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(dev.to_string().contains("character device"), "{dev}");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.wasm");
        let f = std::fs::File::create(&big).unwrap();
        // Sparse: the size says 2 GiB, nothing is written.
        f.set_len(2 << 30).unwrap();
        let e = read(&big, 32 << 20).unwrap_err();
        assert!(
            matches!(e, SourceError::TooLarge { size, .. } if size == 2 << 30),
            "{e}"
        );
        assert!(e.to_string().contains("plugins.max_file_size"), "{e}");
    }

    #[test]
    fn a_symlink_to_a_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.wasm");
        std::fs::write(&real, b"\0asm").unwrap();
        let link = dir.path().join("link.wasm");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(read(&link, 100).unwrap(), b"\0asm");
        assert_eq!(
            read(&dir.path().join("none.wasm"), 100).unwrap_err(),
            SourceError::Missing(dir.path().join("none.wasm").display().to_string())
        );
    }
}
