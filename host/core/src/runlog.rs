//! Size-capped log files that keep the tail: output goes to `NAME`; when it
//! reaches half the cap it becomes `NAME.1` (replacing the older half) and a
//! fresh `NAME` starts. At most `cap` bytes are kept, always the newest.
//! A write error (a full disk) stops logging, not the task: the pipe keeps
//! being drained and the error is reported in the run's status. The file is
//! created at the first byte, so a silent task costs no file.

/// Standard output log.
pub const STDOUT: &str = "stdout.log";
/// Standard error log.
pub const STDERR: &str = "stderr.log";

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// A capped log being written.
pub struct CappedLog {
    path: PathBuf,
    half: u64,
    file: Option<File>,
    written: u64,
    /// Bytes dropped from the front so far.
    pub dropped: u64,
    /// The first write error, after which nothing more is written.
    pub error: Option<String>,
}

impl CappedLog {
    /// A log at `path` keeping at most `cap` bytes; nothing is created yet.
    pub fn new(path: &Path, cap: u64) -> CappedLog {
        CappedLog {
            path: path.to_path_buf(),
            half: (cap / 2).max(1),
            file: None,
            written: 0,
            dropped: 0,
            error: None,
        }
    }

    /// The older half's path.
    pub fn rotated_path(path: &Path) -> PathBuf {
        let mut p = path.as_os_str().to_owned();
        p.push(".1");
        PathBuf::from(p)
    }

    /// Appends `buf`, rotating as needed. Never fails: errors are kept in `error`.
    pub fn write(&mut self, mut buf: &[u8]) {
        while !buf.is_empty() && self.error.is_none() {
            if self.written >= self.half
                && let Err(e) = self.rotate()
            {
                self.fail(e);
                return;
            }
            if self.file.is_none() {
                if let Some(parent) = self.path.parent()
                    && let Err(e) = std::fs::create_dir_all(parent)
                {
                    return self.fail(e);
                }
                match File::create(&self.path) {
                    Ok(f) => self.file = Some(f),
                    Err(e) => return self.fail(e),
                }
            }
            let room = (self.half - self.written) as usize;
            let n = room.min(buf.len());
            let Some(f) = self.file.as_mut() else { return };
            if let Err(e) = f.write_all(&buf[..n]) {
                self.fail(e);
                return;
            }
            self.written += n as u64;
            buf = &buf[n..];
        }
    }

    fn rotate(&mut self) -> io::Result<()> {
        let old = Self::rotated_path(&self.path);
        if let Ok(meta) = std::fs::metadata(&old) {
            self.dropped += meta.len();
        }
        self.file = None;
        std::fs::rename(&self.path, &old)?;
        self.file = Some(File::create(&self.path)?);
        self.written = 0;
        Ok(())
    }

    fn fail(&mut self, e: io::Error) {
        self.error = Some(format!("{}: {e}", self.path.display()));
        self.file = None;
    }

    /// Copies `src` into the log until end of file.
    pub fn drain(&mut self, mut src: impl Read) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match src.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => self.write(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
        }
    }
}

/// Reads a capped log back in order: the rotated half, then the current one.
/// A log that was never created (a silent task) reads as empty.
pub fn read_all(path: &Path) -> io::Result<Vec<u8>> {
    let mut out = std::fs::read(CappedLog::rotated_path(path)).unwrap_or_default();
    match std::fs::read(path) {
        Ok(b) => out.extend(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let mut log = CappedLog::new(&path, 100);
        let text: String = (0..100).map(|i| format!("line {i:03}\n")).collect();
        log.drain(text.as_bytes());
        let kept = read_all(&path).unwrap();
        assert!(kept.len() <= 100, "kept {} bytes", kept.len());
        assert!(String::from_utf8_lossy(&kept).ends_with("line 099\n"));
        assert_eq!(log.dropped as usize + kept.len(), text.len());
    }

    #[test]
    fn a_silent_task_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quiet.log");
        CappedLog::new(&path, 100).drain(&b""[..]);
        assert!(!path.exists());
        assert!(read_all(&path).unwrap().is_empty());
    }

    #[test]
    fn a_full_disk_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.log");
        std::os::unix::fs::symlink("/dev/full", &path).unwrap();
        let mut log = CappedLog {
            path: path.clone(),
            half: 1 << 20,
            file: Some(std::fs::OpenOptions::new().write(true).open(&path).unwrap()),
            written: 0,
            dropped: 0,
            error: None,
        };
        log.drain(&b"hello\n"[..]);
        log.drain(&b"more output after the disk filled\n"[..]);
        let err = log.error.expect("the write error is kept");
        assert!(err.contains("No space left"), "{err}");
    }
}
