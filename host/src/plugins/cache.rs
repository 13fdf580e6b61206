//! Caches of compiled components (`*.cwasm`): pruning what was not used
//! for a while ([`prune`]: the daemon's, by `[retention] plugin_cache`),
//! and the caller's own cache for the commands a user runs without the
//! daemon (`nightjar simulate`, `nightjar plugins test`):
//! `$XDG_CACHE_HOME/nightjar/plugins`, else `~/.cache/nightjar/plugins`,
//! pruned of what was not used for [`USER_UNUSED`] each time it is used.
//! Compiling the four first-party policies takes about 1.7 s of a release
//! build's time here, at every run; a cached component loads in
//! milliseconds.
//!
//! Compiled code is native code: it is loaded only from a folder no one but
//! the caller (and root) could have written. Every folder on the path must
//! be the caller's or root's, and writable by no one else unless it is
//! sticky (`/tmp`: others cannot rename what is in it). Otherwise, or with
//! no home, there is no cache and components are compiled afresh, as
//! before. The daemon's state dir is never used: the config may name one
//! the caller does not own.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long a component in the caller's own cache stays unused before it
/// is deleted (a plugin author's every build is a new file).
pub const USER_UNUSED: Duration = Duration::from_secs(30 * 86_400);

/// The cache folder for the caller (`euid`, whose home the user database
/// gives as `home`, for when `$HOME` is unset), made (0700) if missing;
/// `None` where there is no safe one.
pub fn dir(euid: u32, home: Option<PathBuf>) -> Option<PathBuf> {
    let absolute = |v: Option<std::ffi::OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute(std::env::var_os("XDG_CACHE_HOME")).or_else(|| {
        let home = absolute(std::env::var_os("HOME")).or(home)?;
        Some(home.join(".cache"))
    })?;
    let dir = in_base(&base, euid)?;
    prune(&dir, USER_UNUSED, false);
    Some(dir)
}

/// `base/nightjar/plugins` for `euid`, made (0700) if missing, when safe.
fn in_base(base: &Path, euid: u32) -> Option<PathBuf> {
    let dir = base.join("nightjar").join("plugins");
    if std::fs::symlink_metadata(&dir).is_err() {
        // Made only under a path that is already safe: nothing is made in
        // a folder another user controls (a sticky one, such as /tmp,
        // will do: no one else can rename what the caller makes in it).
        let existing = dir
            .ancestors()
            .find(|p| std::fs::symlink_metadata(p).is_ok())?;
        checked(existing, euid, true).then_some(())?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .ok()?;
    }
    safe(&dir, euid).then_some(dir)
}

/// Whether `path` and every folder above it is a real folder (not a link)
/// of `uid` or root that no one else may write into (sticky folders above
/// it aside: sticky stops others renaming an entry, not adding one).
pub fn safe(path: &Path, uid: u32) -> bool {
    checked(path, uid, false)
}

/// [`safe`], `path` itself allowed to be sticky where `sticky_self`.
fn checked(path: &Path, uid: u32, sticky_self: bool) -> bool {
    let mut at = Some(path);
    while let Some(p) = at {
        let Ok(m) = std::fs::symlink_metadata(p) else {
            return false;
        };
        let others_write = m.mode() & 0o022 != 0;
        let sticky = m.mode() & 0o1000 != 0 && (sticky_self || p != path);
        if !m.is_dir() || (m.uid() != uid && m.uid() != 0) || (others_write && !sticky) {
            return false;
        }
        at = p.parent();
    }
    true
}

/// Deletes compiled plugins (`*.cwasm`) in `dir` not used for `unused`
/// (a use refreshes the file's modification time); returns how many.
pub fn prune(dir: &std::path::Path, unused: Duration, dry_run: bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let cutoff = SystemTime::now()
        .checked_sub(unused)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut n = 0;
    for e in entries.flatten() {
        let path = e.path();
        let old = e
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| m.modified().ok())
            .is_some_and(|t| t < cutoff);
        if old
            && path.extension().is_some_and(|x| x == "cwasm")
            && (dry_run || std::fs::remove_file(&path).is_ok())
        {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_cache_folder_anyone_else_could_write_or_swap_is_not_used() {
        let root = tempfile::tempdir().unwrap();
        // The test's own user: the owner of what it just made.
        let me = std::fs::metadata(root.path()).unwrap().uid();
        let mine = root.path().join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
        // /tmp is sticky: what is in it is the caller's to keep.
        assert!(safe(&mine, me), "a private folder under a sticky /tmp");
        let shared = root.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o775)).unwrap();
        let inside = shared.join("cache");
        std::fs::create_dir(&inside).unwrap();
        assert!(!safe(&inside, me), "a group-writable folder above it");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        assert!(!safe(&link, me), "a link in place of the folder");
        if me != 0 {
            // (Root's folders are trusted by everyone.)
            assert!(!safe(&mine, me + 1), "another user's folder");
        }
        assert!(!safe(&root.path().join("absent"), me));
    }

    #[test]
    fn a_cache_folder_others_may_add_files_to_is_not_used_though_sticky() {
        // Sticky keeps others from renaming what is in a folder, not from
        // adding to it: another user could put a component's file there
        // before the caller compiles it.
        let root = tempfile::tempdir().unwrap();
        // The test's own user: the owner of what it just made.
        let me = std::fs::metadata(root.path()).unwrap().uid();
        let cache = root.path().join("plugins");
        std::fs::create_dir(&cache).unwrap();
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(!safe(&cache, me), "a sticky folder anyone may write into");
        let mine = cache.join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(safe(&mine, me), "a private folder under a sticky one");
    }

    #[test]
    fn only_cached_plugins_unused_past_the_cutoff_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("a.cwasm");
        let fresh = dir.path().join("b.cwasm");
        let other = dir.path().join("notes.txt");
        for p in [&old, &fresh, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        let long_ago = SystemTime::now() - Duration::from_secs(40 * 86_400);
        for p in [&old, &other] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        let month = Duration::from_secs(30 * 86_400);
        assert_eq!(prune(dir.path(), month, true), 1);
        assert!(old.exists(), "a dry run deletes nothing");
        assert_eq!(prune(dir.path(), month, false), 1);
        assert!(!old.exists() && fresh.exists() && other.exists());
    }

    #[test]
    fn a_cache_is_made_private_in_a_sticky_folder_and_not_in_an_open_one() {
        let root = tempfile::tempdir().unwrap();
        let me = std::fs::metadata(root.path()).unwrap().uid();
        // As XDG_CACHE_HOME=/tmp/x, /tmp/x not made yet.
        let sticky = root.path().join("tmp");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let made = in_base(&sticky.join("x"), me).expect("made in a sticky folder");
        let mode = std::fs::metadata(&made).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o700, "the caller's alone");
        assert_eq!(in_base(&sticky.join("x"), me), Some(made), "and used again");
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(in_base(&open.join("x"), me), None);
        assert!(!open.join("x").exists(), "nothing made in it");
    }
}
