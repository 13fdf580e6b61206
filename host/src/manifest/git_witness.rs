//! What a kept git state is checked against ([`super::git_cache`]): the
//! `lstat` stamps of the files git's answer depends on, taken as the
//! task's owner. A control file that is a symbolic link (a `~/.gitconfig`
//! kept in a dotfiles repository) is stamped through the link too: git
//! reads the target, whose edits leave the link's own stamp unchanged.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::git::read_small;
use crate::privsep::Owned;

/// What a file's `lstat` says that a write changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            uid: m.uid(),
            gid: m.gid(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    fn kind(&self) -> u32 {
        self.mode & libc::S_IFMT
    }
}

/// Whether an error means "nothing there" (not "cannot look").
fn absent(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR))
}

/// `path`'s stamp: `Ok(None)` when nothing is there; `Err` when it cannot
/// be looked at (then nothing is kept, and nothing kept is reused).
pub(super) fn stamp(path: &Path) -> Result<Option<Stamp>, ()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(Stamp::of(&m))),
        Err(e) if absent(&e) => Ok(None),
        Err(_) => Err(()),
    }
}

/// `path`'s stamp, then, when it is a symbolic link, its target's (what
/// git reads); both pushed to `into`.
fn stamp_through(path: &Path, into: &mut Vec<Option<Stamp>>) -> Result<(), ()> {
    let own = stamp(path)?;
    let target = match own {
        Some(s) if s.kind() == libc::S_IFLNK => match std::fs::metadata(path) {
            Ok(m) => Some(Stamp::of(&m)),
            Err(e) if absent(&e) => None,
            Err(_) => return Err(()),
        },
        _ => None,
    };
    into.push(own);
    into.push(target);
    Ok(())
}

/// A ref name git would follow: under `refs/`, no empty or `..` part.
fn plain_ref(r: &str) -> bool {
    r.starts_with("refs/") && !r.split('/').any(|p| p.is_empty() || p == "." || p == "..")
}

/// A detached `HEAD`: an object name, SHA-1 or SHA-256.
fn object_name(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The ref a symbolic ref's text names (`ref:`, spaces, the name).
fn symref(text: &str) -> Option<String> {
    let r = text.trim().strip_prefix("ref:")?;
    Some(r.trim().to_string())
}

/// Symbolic refs followed at most (git's own limit).
const SYMREF_DEPTH: usize = 5;

/// The repository's own files and the user's git files.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Controls {
    /// The index's stamp (and its target's if a link).
    pub(super) index: Vec<Option<Stamp>>,
    /// `HEAD`'s text.
    head: String,
    /// The other files, in a fixed order (a link's target after it).
    files: Vec<Option<Stamp>>,
    /// The config files among them, as git names them when it lists
    /// where each setting comes from.
    pub(super) configs: Vec<PathBuf>,
}

impl Controls {
    /// `None`: a repository whose state is not kept (see the cache's doc),
    /// or a `.git` git would not take as a repository (it would answer for
    /// one further up, whose files are not these).
    pub(super) fn take(top: &Path, owned: &Owned<'_>) -> Option<Controls> {
        let git = top.join(".git");
        let is_dir = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_dir());
        if !std::fs::symlink_metadata(&git).ok()?.is_dir()
            || git.join("reftable").exists()
            || !is_dir(&git.join("objects"))
            || !is_dir(&git.join("refs"))
            // Refs and config in another repository's folder.
            || stamp(&git.join("commondir")).ok()?.is_some()
        {
            return None;
        }
        let head = read_small(&git.join("HEAD"))?;
        let mut paths = vec![
            git.join("HEAD"),
            git.join("packed-refs"),
            // `git replace`: another commit's tree stands in for HEAD's.
            git.join("refs/replace"),
            git.join("info/attributes"),
            PathBuf::from("/etc/gitattributes"),
        ];
        paths.extend(refs_of(&git, head.trim())?);
        let home = owned.home();
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        let mut configs = vec![git.join("config"), PathBuf::from("/etc/gitconfig")];
        if let Some(h) = &home {
            configs.push(h.join(".gitconfig"));
        }
        if let Some(x) = &xdg {
            configs.push(x.join("git/config"));
            paths.push(x.join("git/attributes"));
        }
        for var in ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"] {
            if let Some(p) = std::env::var_os(var) {
                configs.push(PathBuf::from(p));
            }
        }
        let mut files = Vec::with_capacity(2 * (paths.len() + configs.len()));
        for p in paths.iter().chain(&configs) {
            stamp_through(p, &mut files).ok()?;
        }
        let mut index = Vec::with_capacity(2);
        stamp_through(&git.join("index"), &mut index).ok()?;
        Some(Controls {
            index,
            head,
            files,
            configs,
        })
    }
}

/// The loose ref files `HEAD` (whose text is `head`) resolves through:
/// each symbolic ref's target too. `None`: not one git would follow, a
/// link (git reads some as symbolic refs), or too deep.
fn refs_of(git: &Path, head: &str) -> Option<Vec<PathBuf>> {
    let mut next = match symref(head) {
        Some(r) => Some(r),
        None if object_name(head) => None,
        None => return None,
    };
    let mut refs = Vec::new();
    while let Some(r) = next.take() {
        if refs.len() >= SYMREF_DEPTH || !plain_ref(&r) {
            return None;
        }
        let path = git.join(&r);
        match stamp(&path).ok()? {
            None => {}
            Some(s) if s.kind() == libc::S_IFREG => {
                let text = read_small(&path)?;
                next = symref(&text);
            }
            Some(_) => return None,
        }
        refs.push(path);
    }
    Some(refs)
}

/// Everything a capture's answer depends on, looked at before git answers.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Witness {
    pub(super) controls: Controls,
    /// Every tracked file's stamp, then each tracked folder's
    /// `.gitattributes` (and its target if a link), in the entries' order.
    files: Vec<Option<Stamp>>,
    /// Each tracked folder's (device, inode, type): a folder replaced (by
    /// a link elsewhere, or another folder) is another folder.
    folders: Vec<Option<(u64, u64, u32)>>,
}

/// Stats between two looks at the clock.
const STATS_PER_LOOK: usize = 256;

/// The index's entries (mode, path from the top) and the folders that hold
/// them (the top first), derived once and kept while the index is unchanged.
#[derive(Debug)]
pub(super) struct Tracked {
    pub(super) entries: Vec<(u32, PathBuf)>,
    folders: Vec<PathBuf>,
}

impl Tracked {
    /// `entries` with their folders.
    pub(super) fn new(entries: Vec<(u32, PathBuf)>) -> Tracked {
        let mut folders: Vec<&Path> = vec![Path::new("")];
        for (_, p) in &entries {
            let mut parent = p.parent();
            while let Some(d) = parent.filter(|d| !d.as_os_str().is_empty()) {
                folders.push(d);
                parent = d.parent();
            }
        }
        folders.sort_unstable();
        folders.dedup();
        let folders = folders.into_iter().map(Path::to_path_buf).collect();
        Tracked { entries, folders }
    }
}

impl Witness {
    /// `None` when a file cannot be looked at, or past `deadline` (a
    /// slow file system: git, asked instead, is bounded by it).
    pub(super) fn take(
        top: &Path,
        controls: Controls,
        tracked: &Tracked,
        deadline: Instant,
    ) -> Option<Witness> {
        let (entries, folders) = (&tracked.entries, &tracked.folders);
        // After every STATS_PER_LOOK stats (a folder costs two or three).
        let late = |i: usize, per: usize| i % per == per - 1 && Instant::now() >= deadline;
        let mut files = Vec::with_capacity(entries.len() + 2 * folders.len());
        for (i, (_, p)) in entries.iter().enumerate() {
            if late(i, STATS_PER_LOOK) {
                return None;
            }
            files.push(stamp(&top.join(p)).ok()?);
        }
        let mut ids = Vec::with_capacity(folders.len());
        for (i, d) in folders.iter().enumerate() {
            if late(i, STATS_PER_LOOK / 2) {
                return None;
            }
            let dir = top.join(d);
            stamp_through(&dir.join(".gitattributes"), &mut files).ok()?;
            ids.push(stamp(&dir).ok()?.map(|s| (s.dev, s.ino, s.kind())));
        }
        Some(Witness {
            controls,
            files,
            folders: ids,
        })
    }

    /// Whether a file was changed less than `margin` before `since` (or
    /// after it): too close for a later write to be sure to move its times.
    pub(super) fn racy(&self, since: SystemTime, margin: Duration) -> bool {
        let Ok(t) = since.duration_since(UNIX_EPOCH) else {
            return true;
        };
        let limit = t.saturating_sub(margin);
        let limit = (limit.as_secs() as i64, i64::from(limit.subsec_nanos()));
        let c = &self.controls;
        c.index
            .iter()
            .chain(&c.files)
            .chain(&self.files)
            .flatten()
            .any(|s| s.mtime >= limit || s.ctime >= limit)
    }
}
