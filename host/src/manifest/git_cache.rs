//! A repository's git state kept for reuse, so that a submit (and a run's
//! start) from a repository that has not changed since the last capture
//! costs file stats instead of a `git status` process (about 2 ms each on
//! the machines we measured; `scripts/bench startup`).
//!
//! A capture is kept with its **witness**: taken *before* git is asked,
//! the `lstat` of every file the answer depends on (the index, `HEAD` and
//! its content, the refs it resolves through, `packed-refs`,
//! `refs/replace`, the repository's and the user's git config and
//! attributes files and the targets of those that are links, every
//! tracked file, each tracked folder's identity and its `.gitattributes`;
//! [`super::git_witness`]). A later capture
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
//! (`.git` is a file), a `.git` with a `commondir` or one git would pass
//! over for a repository further up (no `objects`, an invalid `HEAD`),
//! repositories with submodules (gitlinks) or reftable refs, more than [`MAX_TRACKED`] tracked files (or
//! [`MAX_PATH_BYTES`] of their paths), a witness not taken by the capture's
//! deadline, and a capture that was incomplete (a timeout, git failing). Kept per
//! repository and per user (the stats run as the task's owner, as git
//! does), at most [`MAX_REPOS`] repositories, least recently used first
//! out.
//!
//! Nor is a capture kept when git's configuration (as `git config --list
//! --show-origin` gives it) comes from a file outside the witness (an
//! `include.path`, a git installed elsewhere than `/usr`), includes one
//! (`include.*`, `includeIf.*`: a file that does not exist yet is read
//! once it does), or names a file or folder the witness does not cover
//! (`core.worktree`, `core.attributesFile`, `diff.orderFile`, `attr.tree`,
//! `extensions.worktreeConfig`), or when `diff.relative` makes the diff
//! depend on the folder git runs in (a state is kept per repository).
//! Not watched: the `git` binary itself, and programs a config runs
//! (`filter.*.clean`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use nightjar_core::api::manifest::GitRecord;

use super::git::{At, fresh, git};
use super::git_witness::{Controls, Tracked, Witness};
use crate::privsep::Owned;
use crate::sync::LockUnpoisoned;
use crate::sys::bounded;

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
    /// The index's entries the witness covers, with their folders (reused
    /// while the index is unchanged).
    tracked: Arc<Tracked>,
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
        let listed = match &before {
            Some(k) if k.witness.controls.index == controls.index => Some(Arc::clone(&k.tracked)),
            _ => tracked(at.top, at.deadline, (MAX_TRACKED, MAX_PATH_BYTES), owned)
                .map(|e| Arc::new(Tracked::new(e))),
        };
        let Some(listed) = listed.filter(|t| t.entries.iter().all(|(mode, _)| *mode != GITLINK))
        else {
            return fresh(at, owned);
        };
        let Some(witness) = Witness::take(at.top, controls, &listed, at.deadline) else {
            return fresh(at, owned);
        };
        if let Some(k) = before.filter(|k| k.witness == witness) {
            k.used.store(self.tick(), Ordering::Relaxed);
            self.hits.fetch_add(1, Ordering::Relaxed);
            return k.record.clone();
        }
        let record = fresh(at, owned);
        if record.note.is_none()
            && !witness.racy(since, self.margin)
            && config_covered(at.top, &witness.controls.configs, at.deadline, owned)
        {
            self.keep(key, witness, record.clone(), listed);
        }
        record
    }

    fn keep(&self, key: Key, w: Witness, rec: GitRecord, tracked: Arc<Tracked>) {
        let kept = Arc::new(Kept {
            witness: w,
            record: rec,
            tracked,
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

/// The index's entries of the repository at `top`, as `git ls-files
/// --stage` lists them: (mode, path from the top); `None` past `most`
/// entries or `most_bytes` of paths, or when git cannot answer by `deadline`.
pub(super) fn tracked(
    top: &Path,
    deadline: Instant,
    (most, most_bytes): (usize, usize),
    owned: Owned<'_>,
) -> Option<Vec<(u32, PathBuf)>> {
    let mut listing = Listing::new(most, most_bytes);
    let ran = bounded::run(
        git(top, owned).ok()?.args(["ls-files", "-z", "--stage"]),
        deadline,
        |b| listing.feed(b),
    )
    .ok()?;
    if !ran.ok() {
        return None;
    }
    listing.end()
}

/// `git ls-files -z --stage` read as it streams, within its bounds: an
/// entry is never held past `most_bytes` (an index can hold a path of any
/// length), and each byte is looked at once.
pub(super) struct Listing {
    entries: Vec<(u32, PathBuf)>,
    /// The entry being read.
    rest: Vec<u8>,
    bytes: usize,
    most: usize,
    most_bytes: usize,
    bad: bool,
}

impl Listing {
    pub(super) fn new(most: usize, most_bytes: usize) -> Listing {
        Listing {
            entries: Vec::new(),
            rest: Vec::new(),
            bytes: 0,
            most,
            most_bytes,
            bad: false,
        }
    }

    pub(super) fn feed(&mut self, mut b: &[u8]) {
        while !self.bad && !b.is_empty() {
            let (part, more) = match b.iter().position(|&c| c == 0) {
                Some(end) => (&b[..end], Some(&b[end + 1..])),
                None => (b, None),
            };
            self.rest.extend_from_slice(part);
            if self.bytes + self.rest.len() >= self.most_bytes {
                self.refuse();
                return;
            }
            match more {
                Some(m) => {
                    self.entry();
                    b = m;
                }
                None => return,
            }
        }
    }

    /// `MODE OBJECT STAGE<TAB>PATH`, ended.
    fn entry(&mut self) {
        use std::os::unix::ffi::OsStrExt;
        let line = std::mem::take(&mut self.rest);
        self.bytes += line.len() + 1;
        let parsed = line.iter().position(|&c| c == b'\t').and_then(|tab| {
            let head = std::str::from_utf8(&line[..tab]).ok()?;
            let mode = u32::from_str_radix(head.split(' ').next()?, 8).ok()?;
            let path = std::ffi::OsStr::from_bytes(&line[tab + 1..]);
            Some((mode, PathBuf::from(path)))
        });
        match parsed {
            Some(e) if self.entries.len() < self.most && self.bytes <= self.most_bytes => {
                self.entries.push(e)
            }
            _ => self.refuse(),
        }
    }

    fn refuse(&mut self) {
        self.bad = true;
        self.rest = Vec::new();
        self.entries = Vec::new();
    }

    /// The entries, if all were read whole within the bounds.
    pub(super) fn end(self) -> Option<Vec<(u32, PathBuf)>> {
        (!self.bad && self.rest.is_empty()).then_some(self.entries)
    }

    /// Bytes held (for tests).
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.rest.capacity() + self.entries.capacity()
    }
}

/// Settings whose value is a file or folder the witness does not cover,
/// or that make git's answer depend on the folder it runs in.
const UNCOVERED: [&str; 6] = [
    "core.worktree",
    "core.attributesfile",
    "diff.orderfile",
    "diff.relative",
    "attr.tree",
    "extensions.worktreeconfig",
];

/// Whether git's configuration for the repository at `top` comes only
/// from `configs` (or the command line) and names nothing outside the
/// witness (see the module's doc). `false` when git cannot say by `deadline`.
fn config_covered(top: &Path, configs: &[PathBuf], deadline: Instant, owned: Owned<'_>) -> bool {
    let Ok(mut cmd) = git(top, owned) else {
        return false;
    };
    let mut text = Vec::new();
    let mut over = false;
    let ran = bounded::run(
        cmd.args(["config", "--list", "--show-origin", "-z"]),
        deadline,
        |b| {
            over |= text.len() + b.len() > 1 << 20;
            if !over {
                text.extend_from_slice(b);
            }
        },
    );
    if over || !ran.is_ok_and(|r| r.ok()) {
        return false;
    }
    // `ORIGIN\0KEY\nVALUE\0`, or `ORIGIN\0KEY\0` for a key with no value.
    let mut fields = text.split(|&c| c == 0);
    while let (Some(origin), Some(entry)) = (fields.next(), fields.next()) {
        let origin = String::from_utf8_lossy(origin);
        let key = entry.split(|&c| c == b'\n').next().unwrap_or_default();
        let key = String::from_utf8_lossy(key).to_ascii_lowercase();
        let from_witness = match origin.strip_prefix("file:") {
            Some(f) => configs.iter().any(|c| *c == top.join(f)),
            None => origin == "command line:",
        };
        if !from_witness
            || key.starts_with("include.")
            || key.starts_with("includeif.")
            || UNCOVERED.contains(&key.as_str())
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
#[path = "git_cache_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "git_cache_hostile_tests.rs"]
mod hostile_tests;
