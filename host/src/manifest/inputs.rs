//! Input hashes: each input is stat'ed, and a regular file's sha256 comes
//! from the earlier capture or the hash cache when its device, inode,
//! size, mtime and ctime are unchanged (a stat, however large the file),
//! else it is read once, streamed, at disk speed. Anything that is not a
//! regular file (a FIFO, a device such as /dev/zero, a folder, a symlink
//! loop) is recorded as what it is and never opened for reading.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::git::hex;
use nightjar_core::api::manifest::{CaptureStats, InputRecord};

/// A file's identity for the hash cache: a file whose key is unchanged
/// has the content it had when it was hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, Unix ns.
    pub mtime_ns: i64,
    /// Status-change time, Unix ns (a `touch -d` that puts the mtime back
    /// still moves it).
    pub ctime_ns: i64,
}

impl Key {
    fn of(m: &std::fs::Metadata) -> Key {
        Key {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
            ctime_ns: m.ctime() * 1_000_000_000 + m.ctime_nsec(),
        }
    }

    /// The key of an earlier record, when it has one.
    fn of_record(r: &InputRecord) -> Option<Key> {
        Some(Key {
            dev: r.dev?,
            ino: r.ino?,
            size: r.size?,
            mtime_ns: r.mtime_ns?,
            ctime_ns: r.ctime_ns?,
        })
    }
}

/// An input record's copy of a key.
trait SetKey {
    fn set_key(&mut self, key: &Key);
}

impl SetKey for InputRecord {
    fn set_key(&mut self, key: &Key) {
        self.size = Some(key.size);
        self.mtime_ns = Some(key.mtime_ns);
        self.dev = Some(key.dev);
        self.ino = Some(key.ino);
        self.ctime_ns = Some(key.ctime_ns);
    }
}

/// Where hashes of earlier captures are kept (the store's `input_digests`).
pub trait HashCache {
    /// The hashes known for `keys` (one lookup for all).
    fn lookup(&mut self, keys: &[Key]) -> HashMap<Key, String>;
    /// Remembers fresh hashes, with the path each was read from.
    fn remember(&mut self, fresh: &[(Key, String, String)]);
}

/// A file modified this close to its hashing (or later) is not cached: a
/// write in the same timestamp tick could change it without moving its mtime.
const RACY_NS: i64 = 2_000_000_000;

/// Whether a file with `key` was settled at `at_ns`: modified (content or
/// status) at least [`RACY_NS`] before.
fn settled(key: &Key, at_ns: i64) -> bool {
    key.mtime_ns.max(key.ctime_ns) < at_ns.saturating_sub(RACY_NS)
}

/// What came before a capture: the earlier capture's inputs (the submit
/// manifest's, at a run's start) and when it was made (Unix ms).
pub struct Earlier<'a> {
    /// Its input records.
    pub inputs: &'a [InputRecord],
    /// When it was captured.
    pub at_ms: i64,
}

/// Records every input of `paths`. `earlier` and then `cache` give the
/// hashes of files unchanged since they were read; `verify` reads every
/// file again. `stats` counts what was read.
pub fn record_all(
    paths: &[std::path::PathBuf],
    earlier: Option<Earlier<'_>>,
    cache: &mut dyn HashCache,
    verify: bool,
    stats: &mut CaptureStats,
) -> Vec<InputRecord> {
    let (earlier, earlier_ns) = match earlier {
        Some(e) => (e.inputs, e.at_ms.saturating_mul(1_000_000)),
        None => (&[][..], 0),
    };
    let before: HashMap<&Path, &InputRecord> =
        earlier.iter().map(|r| (r.path.as_path(), r)).collect();
    let mut records: Vec<(InputRecord, Option<Key>)> = paths.iter().map(|p| stat(p)).collect();
    // Unchanged since the earlier capture: its hash, no lookup at all.
    let mut wanted = Vec::new();
    for (rec, key) in records.iter_mut() {
        let Some(key) = *key else { continue };
        let prior = before.get(rec.path.as_path()).copied();
        let same = |p: &&InputRecord| Key::of_record(p) == Some(key) && settled(&key, earlier_ns);
        match prior.filter(|p| !verify && same(p)) {
            Some(p) if p.sha256.is_some() => {
                rec.sha256 = p.sha256.clone();
                stats.cached += 1;
            }
            _ => wanted.push(key),
        }
    }
    let known = if verify || wanted.is_empty() {
        HashMap::new()
    } else {
        cache.lookup(&wanted)
    };
    let now_ns = crate::time::now_ms().saturating_mul(1_000_000);
    let mut fresh = Vec::new();
    for (rec, key) in records.iter_mut() {
        let Some(key) = *key else { continue };
        if rec.sha256.is_some() {
            continue;
        }
        if let Some(sha) = known.get(&key) {
            rec.sha256 = Some(sha.clone());
            stats.cached += 1;
            continue;
        }
        match hash_file(&rec.path, &key) {
            Ok((sha, bytes)) => {
                stats.hashed += 1;
                stats.hashed_bytes += bytes;
                rec.hashed_now = true;
                if settled(&key, now_ns) {
                    fresh.push((key, sha.clone(), rec.path.display().to_string()));
                }
                rec.sha256 = Some(sha);
            }
            Err(note) => rec.note = Some(note),
        }
    }
    if !fresh.is_empty() {
        cache.remember(&fresh);
    }
    records.into_iter().map(|(r, _)| r).collect()
}

/// What `path` is now; the key only for a regular file.
fn stat(path: &Path) -> (InputRecord, Option<Key>) {
    let mut rec = InputRecord {
        path: path.to_path_buf(),
        ..InputRecord::default()
    };
    let m = match crate::privsep::open::metadata(path, true) {
        Ok(m) => m,
        Err(e) => {
            rec.kind = if e.kind() == std::io::ErrorKind::NotFound {
                // A dangling symlink is not found either.
                "missing".into()
            } else {
                "unreadable".into()
            };
            rec.note = Some(format!("cannot stat: {}", describe(&e)));
            return (rec, None);
        }
    };
    let ft = m.file_type();
    rec.kind = crate::privsep::open::kind_of(&ft).into();
    rec.set_key(&Key::of(&m));
    if ft.is_file() {
        // Readable by whoever captures (the owner, on the daemon's owner
        // thread): a hash, cached or earlier, is shown only to someone
        // who could read the file. The key is the open descriptor's.
        match crate::privsep::open::regular(path, true) {
            Ok((_, m)) => {
                let key = Key::of(&m);
                rec.set_key(&key);
                return (rec, Some(key));
            }
            Err(e) => {
                // Nothing of a file its owner cannot open is shown.
                (rec.size, rec.mtime_ns, rec.dev, rec.ino, rec.ctime_ns) =
                    (None, None, None, None, None);
                rec.kind = "unreadable".into();
                rec.note = Some(format!("cannot open: {e}"));
                return (rec, None);
            }
        }
    }
    {
        rec.note = Some(match rec.kind.as_str() {
            "folder" => {
                "a folder: not hashed (list its files in `inputs` to record their hashes)".into()
            }
            k => format!("a {k}, not a regular file: not read"),
        });
        (rec, None)
    }
}

/// A short cause for an I/O error (`ELOOP` reads as a symlink loop).
fn describe(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ELOOP) => "too many levels of symbolic links (a symlink loop)".into(),
        _ => e.to_string(),
    }
}

/// Reads buffer size: large enough that the hash, not the system calls, sets the pace.
const CHUNK: usize = 1 << 20;

/// sha256 of the regular file at `path`, which must still be the file
/// `key` describes. Opened non-blocking (a FIFO swapped in since the stat
/// cannot block the capture) and checked by its descriptor before reading.
pub fn hash_file(path: &Path, key: &Key) -> Result<(String, u64), String> {
    let (mut f, m) = crate::privsep::open::regular(path, true).map_err(|e| match e {
        crate::privsep::open::Refused::Io(e) => format!("cannot open: {}", describe(&e)),
        other => format!("replaced while being recorded ({other})"),
    })?;
    if m.dev() != key.dev || m.ino() != key.ino {
        return Err("replaced while being recorded: not read".into());
    }
    // SAFETY: advice on our own descriptor; failure is harmless.
    unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(&f),
            0,
            0,
            libc::POSIX_FADV_SEQUENTIAL,
        )
    };
    let (sha, bytes) = hash_reader(&mut f).map_err(|e| format!("cannot read: {}", describe(&e)))?;
    let after = f
        .metadata()
        .map_err(|e| format!("cannot stat: {}", describe(&e)))?;
    if Key::of(&after) != *key || bytes != key.size {
        return Err("changed while being hashed: no hash recorded".into());
    }
    Ok((sha, bytes))
}

/// sha256 of everything `r` gives, read in 1 MiB chunks.
pub fn hash_reader(r: &mut impl Read) -> std::io::Result<(String, u64)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                total += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok((hex(&h.finalize()), total))
}

#[cfg(test)]
#[path = "inputs_tests.rs"]
mod tests;
