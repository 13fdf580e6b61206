//! A repository's git state kept for reuse, so that a submit (and a run's
//! start) from a repository that has not changed since the last capture
//! costs file stats instead of a `git status` process (about 2 ms each on
//! the machines we measured; `scripts/bench startup`).
//!
//! A capture is kept with its **witness**: taken *before* git is asked,
//! the `lstat` of every file the answer depends on (the index, `HEAD` and
//! its content, the ref it names, `packed-refs`, the repository's and the
//! user's git config and attributes files, every tracked file, each
//! tracked folder's identity and its `.gitattributes`). A later capture
//! reuses the answer only if the witness taken then is identical: any
//! write to any of those files moves its modification or change time (or
//! its size, inode, mode or owner), so an identical witness means nothing
//! was written since the first was taken, before git answered.
//!
//! The exception is a write within the file system's timestamp
//! granularity of the witness (a file written, stat'ed, and written again
//! in the same tick keeps its times). So a capture is kept only when every
//! file in its witness was last changed [`RACY`] or more before the witness
//! was taken (git's own "racy git" rule, with a margin for 2-second file
//! systems); a capture right after an edit asks git, and the next keeps it.
//!
//! Not kept at all (git is asked every time): worktrees and submodules
//! (`.git` is a file), repositories with submodules (gitlinks) or
//! reftable refs, more than [`MAX_TRACKED`] tracked files (or
//! [`MAX_PATH_BYTES`] of their paths), a witness not taken by the capture's
//! deadline, and a capture that was incomplete (a timeout, git failing). Kept per
//! repository and per user (the stats run as the task's owner, as git
//! does), at most [`MAX_REPOS`] repositories, least recently used first
//! out. Not watched: config files that a config includes (`include.path`)
//! and the `git` binary itself.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nightjar_core::api::manifest::GitRecord;

use super::git::{At, fresh, read_small, tracked};
use crate::privsep::Owned;
use crate::sync::LockUnpoisoned;

/// Repositories kept at once.
pub const MAX_REPOS: usize = 8;
/// Tracked files above which a repository's state is not kept (its witness
/// would cost memory and stats like git's own walk).
pub const MAX_TRACKED: usize = 20_000;
/// Bytes of tracked paths above which a repository's state is not kept
/// (the paths are held with the witness).
pub const MAX_PATH_BYTES: usize = 2 << 20;
/// How long before the witness a file must have been last changed for a
/// capture to be kept.
pub const RACY: Duration = Duration::from_secs(3);

/// Whom a capture was made as (`None`: the daemon's own user), and the
/// repository's top.
type Key = (Option<u32>, PathBuf);

/// Captures kept, by [`Key`].
pub struct GitCache {
    kept: Mutex<HashMap<Key, Arc<Kept>>>,
    /// A counter for "least recently used".
    ticks: AtomicU64,
    /// [`RACY`] (tests shorten it).
    margin: Duration,
    /// Captures answered from a kept state (for tests and benchmarks).
    pub hits: AtomicU64,
}

impl Default for GitCache {
    fn default() -> GitCache {
        GitCache::with_margin(RACY)
    }
}

struct Kept {
    witness: Witness,
    record: GitRecord,
    /// The index's entries the witness covers (reused while the index is unchanged).
    entries: Arc<[(u32, PathBuf)]>,
    used: AtomicU64,
}

impl GitCache {
    /// A cache that keeps captures whose files were last changed `margin`
    /// or more before (what [`RACY`] is for the daemon).
    pub fn with_margin(margin: Duration) -> GitCache {
        GitCache {
            kept: Mutex::default(),
            ticks: AtomicU64::new(0),
            margin,
            hits: AtomicU64::new(0),
        }
    }

    /// The state of the repository `at.top`: the kept one when its witness
    /// still holds, else git's answer now (then kept when it can be).
    pub(super) fn capture(&self, at: &At<'_>, owned: Owned<'_>) -> GitRecord {
        let key = (owned.uid(), at.top.to_path_buf());
        let before = self.kept.lock_unpoisoned().get(&key).cloned();
        let since = SystemTime::now();
        let Some(controls) = Controls::take(at.top, &owned) else {
            return fresh(at, owned);
        };
        // The index's entries: the kept ones while the index is unchanged.
        let entries = match &before {
            Some(k) if k.witness.controls.index == controls.index => Some(Arc::clone(&k.entries)),
            _ => tracked(at.top, at.deadline, (MAX_TRACKED, MAX_PATH_BYTES), owned).map(Arc::from),
        };
        let Some(entries) = entries.filter(|e| e.iter().all(|(mode, _)| *mode != GITLINK)) else {
            return fresh(at, owned);
        };
        let Some(witness) = Witness::take(at.top, controls, &entries, at.deadline) else {
            return fresh(at, owned);
        };
        if let Some(k) = before.filter(|k| k.witness == witness) {
            k.used.store(self.tick(), Ordering::Relaxed);
            self.hits.fetch_add(1, Ordering::Relaxed);
            return k.record.clone();
        }
        let record = fresh(at, owned);
        if record.note.is_none() && !witness.racy(since, self.margin) {
            self.keep(key, witness, record.clone(), entries);
        }
        record
    }

    fn keep(
        &self,
        key: (Option<u32>, PathBuf),
        w: Witness,
        rec: GitRecord,
        e: Arc<[(u32, PathBuf)]>,
    ) {
        let kept = Arc::new(Kept {
            witness: w,
            record: rec,
            entries: e,
            used: AtomicU64::new(self.tick()),
        });
        let mut map = self.kept.lock_unpoisoned();
        map.insert(key, kept);
        while map.len() > MAX_REPOS {
            let oldest = map
                .iter()
                .min_by_key(|(_, k)| k.used.load(Ordering::Relaxed))
                .map(|(key, _)| key.clone());
            match oldest {
                Some(o) => map.remove(&o),
                None => break,
            };
        }
    }

    fn tick(&self) -> u64 {
        self.ticks.fetch_add(1, Ordering::Relaxed)
    }

    /// How many repositories' states are kept.
    pub fn len(&self) -> usize {
        self.kept.lock_unpoisoned().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A submodule's entry in the index.
const GITLINK: u32 = 0o160000;

/// What a file's `lstat` says that a write changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// `path`'s stamp: `Ok(None)` when nothing is there; `Err` when it cannot
/// be looked at (then nothing is kept, and nothing kept is reused).
fn stamp(path: &Path) -> Result<Option<Stamp>, ()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            uid: m.uid(),
            gid: m.gid(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => Ok(None),
        Err(_) => Err(()),
    }
}

/// The repository's own files and the user's git files.
#[derive(Debug, PartialEq, Eq)]
struct Controls {
    index: Option<Stamp>,
    /// `HEAD`'s text.
    head: String,
    /// The other files, in a fixed order.
    files: Vec<Option<Stamp>>,
}

impl Controls {
    /// `None`: a repository whose state is not kept (see the module's doc).
    fn take(top: &Path, owned: &Owned<'_>) -> Option<Controls> {
        let git = top.join(".git");
        if !std::fs::symlink_metadata(&git).ok()?.is_dir() || git.join("reftable").exists() {
            return None;
        }
        let head = read_small(&git.join("HEAD"))?;
        let mut paths = vec![
            git.join("HEAD"),
            git.join("packed-refs"),
            git.join("config"),
            git.join("info/attributes"),
            PathBuf::from("/etc/gitconfig"),
            PathBuf::from("/etc/gitattributes"),
        ];
        if let Some(r) = head.trim().strip_prefix("ref: ") {
            // A ref outside refs/ (`..`) is git's refusal to make, not ours to follow.
            if !r.starts_with("refs/") || r.split('/').any(|p| p == ".." || p.is_empty()) {
                return None;
            }
            paths.push(git.join(r));
        }
        let home = owned.home();
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        if let Some(h) = &home {
            paths.push(h.join(".gitconfig"));
        }
        if let Some(x) = &xdg {
            paths.push(x.join("git/config"));
            paths.push(x.join("git/attributes"));
        }
        for var in ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"] {
            if let Some(p) = std::env::var_os(var) {
                paths.push(PathBuf::from(p));
            }
        }
        let files = paths
            .iter()
            .map(|p| stamp(p))
            .collect::<Result<_, _>>()
            .ok()?;
        Some(Controls {
            index: stamp(&git.join("index")).ok()?,
            head,
            files,
        })
    }
}

/// Everything a capture's answer depends on, looked at before git answers.
#[derive(Debug, PartialEq, Eq)]
struct Witness {
    controls: Controls,
    /// Every tracked file's stamp, then each tracked folder's
    /// `.gitattributes`, in the entries' order.
    files: Vec<Option<Stamp>>,
    /// Each tracked folder's (device, inode, type): a folder replaced (by
    /// a link elsewhere, or another folder) is another folder.
    folders: Vec<Option<(u64, u64, u32)>>,
}

impl Witness {
    /// `None` when a file cannot be looked at, or past `deadline` (a
    /// slow file system: git, asked instead, is bounded by it).
    fn take(
        top: &Path,
        controls: Controls,
        entries: &[(u32, PathBuf)],
        deadline: Instant,
    ) -> Option<Witness> {
        let mut folders: Vec<&Path> = vec![Path::new("")];
        for (_, p) in entries {
            let mut parent = p.parent();
            while let Some(d) = parent.filter(|d| !d.as_os_str().is_empty()) {
                folders.push(d);
                parent = d.parent();
            }
        }
        folders.sort_unstable();
        folders.dedup();
        let mut files = Vec::with_capacity(entries.len() + folders.len());
        for (i, (_, p)) in entries.iter().enumerate() {
            if i % 256 == 255 && Instant::now() >= deadline {
                return None;
            }
            files.push(stamp(&top.join(p)).ok()?);
        }
        let mut ids = Vec::with_capacity(folders.len());
        for d in &folders {
            let dir = top.join(d);
            files.push(stamp(&dir.join(".gitattributes")).ok()?);
            ids.push(
                stamp(&dir)
                    .ok()?
                    .map(|s| (s.dev, s.ino, s.mode & libc::S_IFMT)),
            );
        }
        Some(Witness {
            controls,
            files,
            folders: ids,
        })
    }

    /// Whether a file was changed less than `margin` before `since` (or
    /// after it): too close for
    /// a later write to be sure to move its times.
    fn racy(&self, since: SystemTime, margin: Duration) -> bool {
        let Ok(t) = since.duration_since(UNIX_EPOCH) else {
            return true;
        };
        let limit = t.saturating_sub(margin);
        let limit = (limit.as_secs() as i64, i64::from(limit.subsec_nanos()));
        let c = &self.controls;
        [c.index]
            .iter()
            .chain(&c.files)
            .chain(&self.files)
            .flatten()
            .any(|s| s.mtime >= limit || s.ctime >= limit)
    }
}

#[cfg(test)]
#[path = "git_cache_tests.rs"]
mod tests;
