//! Copying into the archive's partial folder, every file hashed as it is
//! read: single files of the run folder, and the logs packed as a tar.gz
//! (the output folder's tree is `tree`'s). The flush and the verification
//! that follow are `settle.rs`'s (re-exported here).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt};
use sha2::{Digest, Sha256};

use super::Failure;
pub use super::settle::{flush, fsync_dir, read_back, rename_noreplace, verify};
use nightjar_core::api::outputs::{ArchiveFailure, OutputFile};

/// Copy buffer.
pub(super) const BUF: usize = 256 << 10;

/// What has been written into the partial folder, for the flush and the check.
#[derive(Debug, Default)]
pub struct Written {
    /// Every file, relative to the partial folder, with what was read (its
    /// path for people: a name that is not UTF-8 is shown made valid).
    pub files: Vec<OutputFile>,
    /// Where each of `files` is, relative to the partial folder, byte for byte.
    pub at: Vec<PathBuf>,
    /// Every folder made, relative to the partial folder (parents first).
    pub dirs: Vec<PathBuf>,
}

impl Written {
    /// Bytes written.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Records file `f`, written at `at`.
    pub fn push(&mut self, at: PathBuf, f: OutputFile) {
        self.at.push(at);
        self.files.push(f);
    }
}

/// Opens `name` in `dir` for reading without following a link or blocking on a FIFO.
pub fn open_source(dir: &Dir, name: &Path) -> std::io::Result<File> {
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

/// Streams `src` into a new file `rel` of `dst`; the bytes and their
/// sha256. It stops one byte past `limit` (the size the file had, or was
/// listed with): a size over `limit` says the file grew, and a file still
/// growing is never copied without end.
pub fn stream(
    src: &mut File,
    dst: &Dir,
    rel: &Path,
    limit: u64,
    buf: &mut [u8],
) -> Result<OutputFile, Failure> {
    let shown = rel.display();
    let mut out = dst
        .create(rel)
        .map_err(|e| Failure::io(format!("cannot create {shown} in the archive"), e))?;
    let mut h = Sha256::new();
    let mut size = 0u64;
    let mut src = src.take(limit.saturating_add(1));
    loop {
        let n = src
            .read(buf)
            .map_err(|e| Failure::io(format!("cannot read {shown}"), e))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(|e| Failure::io(format!("cannot write {shown} to the archive"), e))?;
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok(OutputFile {
        path: rel.to_string_lossy().into_owned(),
        size,
        sha256: format!("{:x}", h.finalize()),
    })
}

/// An open of a run folder's file that found none, or a link in its place
/// (a task may write in its run folder; a link is never followed, and is
/// left out like a FIFO rather than failing every try).
fn not_a_file(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ELOOP)
}

/// Whether a run folder's file is one the archive copies: a regular file
/// with one name. The run folder may be its task's owner's (SLURM,
/// `job_user = "owner"`), and a hard link there to a file they cannot
/// read (a second name of it) must not reach the archive through the root
/// daemon, as `nightjar_core::plain_file` refuses it too.
fn plain(m: &cap_std::fs::Metadata) -> bool {
    use cap_std::fs::MetadataExt;
    m.is_file() && m.nlink() == 1
}

/// The failure of a file that grew past `limit` bytes while it was copied.
pub fn grew(name: &str, limit: u64) -> Failure {
    Failure::new(
        ArchiveFailure::Mismatch,
        format!(
            "{name} grew past {limit} bytes while it was archived; is something still writing it?"
        ),
    )
}

/// Copies file `name` of folder `src` to `rel` in `dst`; `Ok(false)` when there is none.
pub fn file(src: &Dir, name: &str, dst: &Dir, rel: &str, w: &mut Written) -> Result<bool, Failure> {
    let mut f = match open_source(src, name.as_ref()) {
        Ok(f) => f,
        Err(e) if not_a_file(&e) => return Ok(false),
        Err(e) => {
            return Err(Failure::io(
                format!("cannot read {name} of the run folder"),
                e,
            ));
        }
    };
    let len = match f.metadata() {
        Ok(m) if plain(&m) => m.len(),
        _ => return Ok(false),
    };
    let mut buf = vec![0u8; BUF];
    let copied = stream(&mut f, dst, rel.as_ref(), len, &mut buf)?;
    if copied.size > len {
        return Err(grew(name, len));
    }
    w.push(rel.into(), copied);
    Ok(true)
}

/// Writes `bytes` as the new file `rel` of `dst`.
pub fn bytes(dst: &Dir, rel: &str, bytes: &[u8], w: &mut Written) -> Result<(), Failure> {
    dst.write(rel, bytes)
        .map_err(|e| Failure::io(format!("cannot write {rel} to the archive"), e))?;
    w.push(
        rel.into(),
        OutputFile {
            path: rel.into(),
            size: bytes.len() as u64,
            sha256: format!("{:x}", Sha256::digest(bytes)),
        },
    );
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
            Err(e) if not_a_file(&e) => continue,
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
        if !plain(&meta) {
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
    w.push(
        rel.into(),
        OutputFile {
            path: rel.into(),
            size: hashing.size,
            sha256: format!("{:x}", hashing.hash.finalize()),
        },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_folder_file_with_a_second_name_is_not_archived() {
        // A hostile owner's run folder: `manifest.json` a hard link to a
        // file of the daemon's, `stdout.log` another; `stderr.log` plain.
        let tmp = tempfile::tempdir().unwrap();
        let (run, out) = (tmp.path().join("run"), tmp.path().join("out"));
        std::fs::create_dir(&run).unwrap();
        std::fs::create_dir(&out).unwrap();
        let secret = tmp.path().join("secret");
        std::fs::write(&secret, b"root only").unwrap();
        std::fs::hard_link(&secret, run.join("manifest.json")).unwrap();
        std::fs::hard_link(&secret, run.join("stdout.log")).unwrap();
        std::fs::write(run.join("stderr.log"), b"plain").unwrap();
        let src = Dir::open_ambient_dir(&run, cap_std::ambient_authority()).unwrap();
        let dst = Dir::open_ambient_dir(&out, cap_std::ambient_authority()).unwrap();
        let mut w = Written::default();
        assert!(!file(&src, "manifest.json", &dst, "manifest.json", &mut w).unwrap());
        assert!(!out.join("manifest.json").exists());
        logs_tar_gz(
            &src,
            &["stdout.log", "stderr.log"],
            &dst,
            "logs.tar.gz",
            &mut w,
        )
        .unwrap();
        let gz = std::fs::File::open(out.join("logs.tar.gz")).unwrap();
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(gz));
        let names: Vec<String> = tar
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["stderr.log"]);
    }

    #[test]
    fn a_source_that_never_ends_is_cut_one_byte_past_its_size() {
        let tmp = tempfile::tempdir().unwrap();
        let dst = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        // A file that grows as fast as it is read: reading it to its end never ends.
        let mut endless = File::from_std(std::fs::File::open("/dev/zero").unwrap());
        let mut buf = vec![0u8; 4096];
        let copied = stream(&mut endless, &dst, Path::new("x"), 10_000, &mut buf).unwrap();
        assert_eq!(copied.size, 10_001, "cut one byte past its size");
        assert_eq!(
            std::fs::metadata(tmp.path().join("x")).unwrap().len(),
            10_001
        );
    }
}
