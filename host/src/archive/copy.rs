//! Copying into the archive's partial folder, every file hashed as it is
//! read: the output folder's tree (through a cap-std `Dir` on it, links
//! never followed), single files of the run folder, and the logs packed as
//! a tar.gz. Then the flush (fsync of every file and folder) and the
//! verification (each file read back from the archive, past the page cache
//! where the kernel allows, against the digest taken while copying).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::rc::Rc;

use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt};
use sha2::{Digest, Sha256};

use super::Failure;
use nightjar_core::api::outputs::{ArchiveFailure, OutputFile, OutputManifest};

/// Folder depth copied at most (as the output manifest's walk).
const MAX_DEPTH: usize = 32;

/// Copy buffer.
const BUF: usize = 256 << 10;

/// What has been written into the partial folder, for the flush and the check.
#[derive(Debug, Default)]
pub struct Written {
    /// Every file, relative to the partial folder, with what was read.
    pub files: Vec<OutputFile>,
    /// Every folder made, relative to the partial folder (parents first).
    pub dirs: Vec<String>,
}

impl Written {
    /// Bytes written.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// Opens `name` in `dir` for reading without following a link or blocking on a FIFO.
fn open_source(dir: &Dir, name: &std::path::Path) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY);
    dir.open_with(name, &opts)
}

/// A writer that hashes what passes through it.
struct Hashing<W> {
    inner: W,
    hash: Sha256,
    size: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Streams `src` into a new file `rel` of `dst`; the bytes and their sha256.
fn stream(src: &mut File, dst: &Dir, rel: &str, buf: &mut [u8]) -> Result<OutputFile, Failure> {
    let mut out = dst
        .create(rel)
        .map_err(|e| Failure::io(format!("cannot create {rel} in the archive"), e))?;
    let mut h = Sha256::new();
    let mut size = 0u64;
    loop {
        let n = src
            .read(buf)
            .map_err(|e| Failure::io(format!("cannot read {rel}"), e))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(|e| Failure::io(format!("cannot write {rel} to the archive"), e))?;
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok(OutputFile {
        path: rel.to_string(),
        size,
        sha256: format!("{:x}", h.finalize()),
    })
}

/// Copies the tree of `src` into `dst` under `prefix` (a folder made
/// here). Each file read must match `expect`'s digest where `expect` lists
/// it; a listed file that is gone is a mismatch too. `after_first` is
/// called once, after the first file.
pub fn tree(
    src: Dir,
    dst: &Dir,
    prefix: &str,
    expect: Option<&OutputManifest>,
    after_first: &mut dyn FnMut(),
    w: &mut Written,
) -> Result<(), Failure> {
    let mkdir = |rel: &str, w: &mut Written| {
        dst.create_dir(rel)
            .map_err(|e| Failure::io(format!("cannot create {rel} in the archive"), e))?;
        w.dirs.push(rel.to_string());
        Ok::<(), Failure>(())
    };
    mkdir(prefix, w)?;
    let mut buf = vec![0u8; BUF];
    let mut seen = 0usize;
    let mut stack: Vec<(Rc<Dir>, OsString, String, usize)> = Vec::new();
    let mut next = Some((Rc::new(src), String::new(), 0usize));
    let read_err = |what: &str, e| Failure::io(format!("cannot read the output folder{what}"), e);
    while let Some((dir, sub, depth)) = next.take() {
        for entry in dir.entries().map_err(|e| read_err("", e))? {
            let entry = entry.map_err(|e| read_err("", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{sub}{name}");
            let kind = entry.file_type().map_err(|e| read_err("", e))?;
            if kind.is_dir() && depth + 1 < MAX_DEPTH {
                mkdir(&format!("{prefix}/{path}"), w)?;
                stack.push((
                    Rc::clone(&dir),
                    entry.file_name(),
                    format!("{path}/"),
                    depth + 1,
                ));
                continue;
            }
            if !kind.is_file() {
                continue; // links, sockets, too deep: not in the manifest either
            }
            let mut file = open_source(&dir, entry.file_name().as_ref())
                .map_err(|e| read_err(&format!(" ({path})"), e))?;
            let mut copied = stream(&mut file, dst, &format!("{prefix}/{path}"), &mut buf)?;
            if let Some(listed) = expect.and_then(|m| m.file(&path)) {
                seen += 1;
                if listed.sha256 != copied.sha256 || listed.size != copied.size {
                    return Err(Failure::new(
                        ArchiveFailure::Mismatch,
                        format!(
                            "output {path} changed since the run ended ({} bytes, sha256 {} then; {} bytes, sha256 {} now); the archive holds only what the run made",
                            listed.size, listed.sha256, copied.size, copied.sha256
                        ),
                    ));
                }
            }
            copied.path = format!("{prefix}/{path}");
            w.files.push(copied);
            if w.files.len() == 1 {
                after_first();
            }
        }
        drop(dir);
        if let Some((parent, name, sub, depth)) = stack.pop() {
            let opened = parent
                .open_dir(&name)
                .map_err(|e| read_err(&format!(" ({sub})"), e))?;
            next = Some((Rc::new(opened), sub, depth));
        }
    }
    if let Some(m) = expect
        && seen < m.files.len()
    {
        let gone: Vec<&str> = m
            .files
            .iter()
            .filter(|f| {
                !w.files
                    .iter()
                    .any(|c| c.path == format!("{prefix}/{}", f.path))
            })
            .map(|f| f.path.as_str())
            .take(5)
            .collect();
        return Err(Failure::new(
            ArchiveFailure::Mismatch,
            format!(
                "{} output file(s) of the run are gone from its output folder ({}); the archive would be incomplete",
                m.files.len() - seen,
                gone.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Copies file `name` of folder `src` to `rel` in `dst`; `Ok(false)` when there is none.
pub fn file(src: &Dir, name: &str, dst: &Dir, rel: &str, w: &mut Written) -> Result<bool, Failure> {
    let mut f = match open_source(src, name.as_ref()) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(Failure::io(
                format!("cannot read {name} of the run folder"),
                e,
            ));
        }
    };
    if !f.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Ok(false);
    }
    let mut buf = vec![0u8; BUF];
    w.files.push(stream(&mut f, dst, rel, &mut buf)?);
    Ok(true)
}

/// Writes `bytes` as the new file `rel` of `dst`.
pub fn bytes(dst: &Dir, rel: &str, bytes: &[u8], w: &mut Written) -> Result<(), Failure> {
    dst.write(rel, bytes)
        .map_err(|e| Failure::io(format!("cannot write {rel} to the archive"), e))?;
    w.files.push(OutputFile {
        path: rel.into(),
        size: bytes.len() as u64,
        sha256: format!("{:x}", Sha256::digest(bytes)),
    });
    Ok(())
}

/// Packs the files `names` of folder `src` that exist into the tar.gz `rel` of `dst`.
pub fn logs_tar_gz(
    src: &Dir,
    names: &[&str],
    dst: &Dir,
    rel: &str,
    w: &mut Written,
) -> Result<(), Failure> {
    let out = dst
        .create(rel)
        .map_err(|e| Failure::io(format!("cannot create {rel} in the archive"), e))?;
    let hashing = Hashing {
        inner: out,
        hash: Sha256::new(),
        size: 0,
    };
    let gz = flate2::write::GzEncoder::new(hashing, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let fail = |e| Failure::io(format!("cannot write {rel} to the archive"), e);
    for name in names {
        let mut f = match open_source(src, name.as_ref()) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(Failure::io(
                    format!("cannot read {name} of the run folder"),
                    e,
                ));
            }
        };
        let meta = f
            .metadata()
            .map_err(|e| Failure::io(format!("cannot read {name} of the run folder"), e))?;
        if !meta.is_file() {
            continue;
        }
        let mut header = tar::Header::new_gnu();
        header.set_size(meta.len());
        header.set_mode(0o644);
        header.set_mtime(
            meta.modified()
                .ok()
                .and_then(|t| t.into_std().duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs()),
        );
        header.set_cksum();
        // A log still growing (it should not be: the run ended) is cut at its size then.
        tar.append_data(&mut header, name, (&mut f).take(meta.len()))
            .map_err(fail)?;
    }
    let gz = tar.into_inner().map_err(fail)?;
    let hashing = gz.finish().map_err(fail)?;
    w.files.push(OutputFile {
        path: rel.into(),
        size: hashing.size,
        sha256: format!("{:x}", hashing.hash.finalize()),
    });
    Ok(())
}

/// fsync of every file and folder written, then of `dst` itself.
pub fn flush(dst: &Dir, w: &Written) -> Result<(), Failure> {
    for f in &w.files {
        let file = dst
            .open(&f.path)
            .map_err(|e| Failure::io(format!("cannot open {} to flush it", f.path), e))?;
        file.sync_all().map_err(|e| {
            Failure::io(format!("cannot flush {} to the archive's disk", f.path), e)
        })?;
    }
    for d in w.dirs.iter().rev() {
        let dir = dst
            .open_dir(d)
            .map_err(|e| Failure::io(format!("cannot open {d} to flush it"), e))?;
        fsync_dir(&dir).map_err(|e| Failure::io(format!("cannot flush folder {d}"), e))?;
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
    // SAFETY: `fd` was opened just above and is closed once, here.
    let r = unsafe { libc::fsync(fd) };
    let err = std::io::Error::last_os_error();
    // SAFETY: as above.
    unsafe { libc::close(fd) };
    if r == 0 { Ok(()) } else { Err(err) }
}

/// Reads every written file back and compares it with what was written.
pub fn verify(dst: &Dir, w: &Written) -> Result<(), Failure> {
    let mut buf = vec![0u8; BUF];
    for f in &w.files {
        let mut file = dst
            .open(&f.path)
            .map_err(|e| Failure::io(format!("cannot open {} to verify it", f.path), e))?;
        // Ask the kernel to drop its cached pages, so the read comes from
        // the archive's disk (or server) where it can; advice only.
        // SAFETY: the descriptor is the File's own.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
        let mut h = Sha256::new();
        let mut size = 0u64;
        loop {
            let n = file
                .read(&mut buf)
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
    }
    Ok(())
}
