//! Whether `[executor] shared_dir` leads where it leads now for as long
//! as the daemon runs: the daemon reaches every run folder by its path, so
//! no other user may be able to change where that path goes (a symbolic
//! link of theirs on the way, a folder of theirs, or one they can write
//! that is not sticky, in which they could rename an entry away and put
//! their own in its place).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// The most symbolic links followed on the way (Linux's own limit).
const MAX_LINKS: u32 = 40;

/// Why a user that `trusted` does not take for the daemon's could change
/// where the absolute `path` leads, if one could. Every entry on the way
/// (each symbolic link, and each folder it goes through) must be a
/// trusted user's, and each folder holding one writable by no other user
/// unless it is sticky (as `/tmp` is). The folder `path` names itself is
/// held to the second rule only: its owner is the caller's to judge. A
/// part not there yet ends the walk (the daemon makes the rest).
pub(super) fn exposed_path(path: &Path, trusted: &dyn Fn(u32) -> bool) -> Option<String> {
    let mut todo: VecDeque<OsString> = parts(path);
    let mut at = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            // `at` holds no link: its parent is its last part's removal.
            at.pop();
            continue;
        }
        let entry = at.join(&name);
        let m = match std::fs::symlink_metadata(&entry) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => return Some(format!("cannot read {}: {e}", entry.display())),
        };
        let parent = match std::fs::metadata(&at) {
            Ok(p) => p.mode(),
            Err(e) => return Some(format!("cannot read {}: {e}", at.display())),
        };
        if parent & 0o022 != 0 && parent & 0o1000 == 0 {
            return Some(format!(
                "{} is writable by group or others (mode {:o}) and not sticky, so they can put a folder of their own in place of {}; `chmod go-w` it, or `chmod +t`",
                at.display(),
                parent & 0o7777,
                entry.display()
            ));
        }
        if m.file_type().is_symlink() {
            if !trusted(m.uid()) {
                return Some(format!(
                    "{} is a symbolic link owned by uid {}, who can point it elsewhere; use the folder's own path, or make the link root's",
                    entry.display(),
                    m.uid()
                ));
            }
            links += 1;
            if links > MAX_LINKS {
                return Some(format!(
                    "{} goes through more than {MAX_LINKS} symbolic links",
                    path.display()
                ));
            }
            let target = match std::fs::read_link(&entry) {
                Ok(t) => t,
                Err(e) => return Some(format!("cannot read {}: {e}", entry.display())),
            };
            if target.is_absolute() {
                at = PathBuf::from("/");
            }
            for part in parts(&target).into_iter().rev() {
                todo.push_front(part);
            }
            continue;
        }
        if !todo.is_empty() && !trusted(m.uid()) {
            return Some(format!(
                "{} is owned by uid {}, who can put a folder of their own in place of what is in it; use a path whose folders are root's",
                entry.display(),
                m.uid()
            ));
        }
        at = entry;
    }
    None
}

/// The names of `path`'s parts, `..` kept, `/` and `.` left out.
fn parts(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn mode(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    #[test]
    fn a_shared_folder_reached_through_what_another_user_can_change_is_refused() {
        let me = crate::users::euid();
        let ours = |uid: u32| uid == 0 || uid == me;
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let shared = base.join("a/shared");
        std::fs::create_dir_all(&shared).unwrap();
        assert_eq!(exposed_path(&shared, &ours), None);
        // Not there yet: the daemon makes it.
        assert_eq!(exposed_path(&base.join("a/none/shared"), &ours), None);
        // A folder on the way others can write: they rename `shared` away.
        mode(&base.join("a"), 0o777);
        let why = exposed_path(&shared, &ours).unwrap();
        assert!(why.contains("a is writable by group or others"), "{why}");
        // Sticky, as /tmp: they cannot.
        mode(&base.join("a"), 0o1777);
        assert_eq!(exposed_path(&shared, &ours), None);
        // A link through a sticky folder, and `..` after it.
        symlink(&shared, base.join("a/link")).unwrap();
        assert_eq!(exposed_path(&base.join("a/link"), &ours), None);
        assert_eq!(exposed_path(&base.join("a/link/../shared"), &ours), None);
        symlink("link", base.join("a/loop")).unwrap();
        std::fs::remove_file(base.join("a/link")).unwrap();
        symlink("loop", base.join("a/link")).unwrap();
        let why = exposed_path(&base.join("a/link"), &ours).unwrap();
        assert!(why.contains("more than 40 symbolic links"), "{why}");
        if me != 0 {
            return;
        }
        // Another user's link in the sticky folder: theirs to re-point.
        std::fs::remove_file(base.join("a/link")).unwrap();
        symlink(&shared, base.join("a/link")).unwrap();
        std::os::unix::fs::lchown(base.join("a/link"), Some(65534), Some(65534)).unwrap();
        let why = exposed_path(&base.join("a/link"), &ours).unwrap();
        assert!(why.contains("symbolic link owned by uid 65534"), "{why}");
        // Another user's folder on the way: theirs to empty and refill.
        mode(&base.join("a"), 0o755);
        std::os::unix::fs::chown(base.join("a"), Some(65534), Some(65534)).unwrap();
        let why = exposed_path(&shared, &ours).unwrap();
        assert!(why.contains("a is owned by uid 65534"), "{why}");
        // The folder itself is the caller's to judge.
        std::os::unix::fs::chown(base.join("a"), Some(0), Some(0)).unwrap();
        std::os::unix::fs::chown(&shared, Some(65534), Some(65534)).unwrap();
        assert_eq!(exposed_path(&shared, &ours), None);
    }
}
