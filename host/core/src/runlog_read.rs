//! Reading a capped log from where a reader left off, across rotations:
//! the log reads as one stream, the rotated half then the current file, and
//! a [`LogCursor`] says where in it the reader is. When the current file has
//! been rotated once since, the cursor still finds its place (its file is now
//! the rotated half); after two rotations the bytes between are gone and the
//! reply says so.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::runlog::CappedLog;

/// Where a reader is in a log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LogCursor {
    /// The current file's identity when read (its inode mixed with its
    /// birth time; 0: there was none yet).
    pub inode: u64,
    /// The rotated half's length then.
    pub rotated: u64,
    /// Bytes of the stream (rotated half, then current file) already read.
    pub offset: u64,
}

/// One read of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRead {
    /// The bytes after the cursor, at most the limit asked.
    pub data: Vec<u8>,
    /// Where the next read starts.
    pub cursor: LogCursor,
    /// Bytes between the cursor and `data` were rotated away unread.
    pub missed: bool,
}

/// The log at `path`, if there is one: a plain file only
/// ([`crate::plain_file::open`]: a run folder may be its task's owner's).
fn open(path: &Path) -> io::Result<Option<File>> {
    match crate::plain_file::open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A file's identity and length. A freed inode number is soon given to a
/// new file (a rotation frees one each time), so the identity mixes in the
/// file's birth time where the file system keeps one (statx).
fn ino_len(f: &Option<File>) -> io::Result<(u64, u64)> {
    match f {
        Some(f) => {
            let m = f.metadata()?;
            let born = m
                .created()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as u64);
            // Never 0: that stands for "no file".
            Ok(((m.ino() ^ born.rotate_left(17)).max(1), m.len()))
        }
        None => Ok((0, 0)),
    }
}

/// Reads at most `max` bytes of the log at `path` after `cursor` (none:
/// from the beginning).
pub fn read_from(path: &Path, cursor: Option<LogCursor>, max: usize) -> io::Result<LogRead> {
    read(path, From::Cursor(cursor), max)
}

/// Reads the last `n` bytes of the log at `path` (at most `max`; the
/// rotated half's end included when the current file is shorter), with a
/// cursor after them for following on.
pub fn read_tail(path: &Path, n: u64, max: usize) -> io::Result<LogRead> {
    read(path, From::Tail(n.min(max as u64)), max)
}

/// Where a read begins.
enum From {
    Cursor(Option<LogCursor>),
    Tail(u64),
}

fn read(path: &Path, from: From, max: usize) -> io::Result<LogRead> {
    let rotated_path = CappedLog::rotated_path(path);
    // Open the current file first: a rotation between the two opens shows
    // as the rotated half being the file just opened; then open again.
    let (mut cur, mut rot);
    let mut tries = 0;
    loop {
        cur = open(path)?;
        rot = open(&rotated_path)?;
        let (ci, _) = ino_len(&cur)?;
        let (ri, _) = ino_len(&rot)?;
        tries += 1;
        if ci == 0 || ci != ri || tries == 3 {
            break;
        }
    }
    let (cur_ino, cur_len) = ino_len(&cur)?;
    let (rot_ino, rot_len) = ino_len(&rot)?;
    let cursor = match from {
        From::Cursor(c) => c,
        From::Tail(_) => None,
    };
    let (start, missed) = match (from, cursor) {
        (From::Tail(n), _) => ((rot_len + cur_len).saturating_sub(n), false),
        (_, None) => (0, false),
        (_, Some(c)) if c.inode == 0 => (0, false),
        (_, Some(c)) if c.inode == cur_ino => (c.offset, false),
        // Rotated once: the reader's file is now the rotated half.
        (_, Some(c)) if c.inode == rot_ino => (c.offset.saturating_sub(c.rotated), false),
        (_, Some(_)) => (0, true),
    };
    let mut data = Vec::new();
    let mut pos = start;
    for (file, len, base) in [(&mut rot, rot_len, 0u64), (&mut cur, cur_len, rot_len)] {
        let Some(f) = file else { continue };
        if pos >= base + len || data.len() >= max {
            continue;
        }
        if pos < base {
            // The rotated half was read short: the rest comes next time.
            break;
        }
        f.seek(SeekFrom::Start(pos - base))?;
        let want = (max - data.len()).min((base + len - pos) as usize);
        let before = data.len();
        f.take(want as u64).read_to_end(&mut data)?;
        pos += (data.len() - before) as u64;
    }
    Ok(LogRead {
        data,
        cursor: LogCursor {
            inode: cur_ino,
            rotated: rot_len,
            offset: pos,
        },
        missed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads everything new, in chunks of `max`.
    fn drain(path: &Path, cursor: &mut Option<LogCursor>, max: usize) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let mut missed = false;
        loop {
            let r = read_from(path, *cursor, max).unwrap();
            missed |= r.missed;
            *cursor = Some(r.cursor);
            if r.data.is_empty() {
                return (out, missed);
            }
            out.extend(r.data);
        }
    }

    #[test]
    fn a_reader_gets_every_byte_once_across_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        let mut cursor = None;
        assert_eq!(drain(&path, &mut cursor, 7), (Vec::new(), false));
        let mut log = CappedLog::new(&path, 40); // halves of 20 bytes
        let mut all: Vec<u8> = Vec::new();
        let mut seen = Vec::new();
        for i in 0..6u8 {
            let line = [format!("line {i} ").as_bytes(), &[0xff, b'\n']].concat();
            log.write(&line);
            all.extend(&line);
            let (got, missed) = drain(&path, &mut cursor, 7);
            assert!(!missed);
            seen.extend(got);
        }
        assert_eq!(seen, all, "every byte, in order, once");
    }

    #[test]
    fn two_rotations_between_reads_say_that_bytes_were_missed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        let mut log = CappedLog::new(&path, 20);
        log.write(b"0123456789");
        let mut cursor = None;
        let (first, _) = drain(&path, &mut cursor, 100);
        assert_eq!(first, b"0123456789");
        for _ in 0..3 {
            log.write(b"abcdefghij");
        }
        let (rest, missed) = drain(&path, &mut cursor, 100);
        assert!(missed);
        assert_eq!(rest, crate::runlog::read_all(&path).unwrap());
    }

    #[test]
    fn a_log_never_written_reads_empty_and_a_first_read_takes_both_halves() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stderr.log");
        let r = read_from(&path, None, 10).unwrap();
        assert!(r.data.is_empty() && !r.missed);
        let mut log = CappedLog::new(&path, 20);
        log.drain(&b"aaaaaaaaaabbbbbbbbbbcc"[..]);
        let mut cursor = None;
        let (all, _) = drain(&path, &mut cursor, 3);
        assert_eq!(all, crate::runlog::read_all(&path).unwrap());
    }

    #[test]
    fn a_tail_is_the_last_bytes_across_the_rotated_half_and_a_cursor_follows_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stderr.log");
        assert!(
            read_tail(&path, 8, 100).unwrap().data.is_empty(),
            "no log yet"
        );
        let mut log = CappedLog::new(&path, 20); // halves of 10 bytes
        log.write(b"0123456789");
        log.write(b"abcdef");
        let all = crate::runlog::read_all(&path).unwrap();
        let t = read_tail(&path, 8, 100).unwrap();
        assert_eq!(t.data, all[all.len() - 8..], "both halves' ends");
        assert_eq!(
            read_tail(&path, 1_000, 100).unwrap().data,
            all,
            "shorter than asked: all"
        );
        assert_eq!(
            read_tail(&path, 1_000, 4).unwrap().data.len(),
            4,
            "at most max"
        );
        log.write(b"XY");
        let mut cursor = Some(t.cursor);
        let (next, missed) = drain(&path, &mut cursor, 100);
        assert_eq!((next.as_slice(), missed), (&b"XY"[..], false));
    }
}
