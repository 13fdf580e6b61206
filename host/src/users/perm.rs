//! Whether a user can reach a path, judged by its mode bits as the kernel
//! would for that user (owner, then group, then others; root may do
//! anything): the daemon runs as root and cannot ask the kernel on a
//! user's behalf without a process of theirs. ACLs are not read, so a
//! folder shared only through an ACL is refused; the error says so.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::Account;

/// What the user must be able to do with the path itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Enter and list it (a working folder).
    Dir,
    /// Read it (an input file or folder).
    Read,
}

const R: u32 = 4;
const X: u32 = 1;

/// The permission bits (`rwx` as 0..7) that apply to `account` on a file.
fn bits(mode: u32, file_uid: u32, file_gid: u32, account: &Account, groups: &[u32]) -> u32 {
    if file_uid == account.uid {
        (mode >> 6) & 7
    } else if groups.contains(&file_gid) {
        (mode >> 3) & 7
    } else {
        mode & 7
    }
}

/// Ok when `account` (in `groups`) can walk to `path` and do `want` with
/// it; else a sentence naming the path and the folder that stops them.
pub fn check(path: &Path, account: &Account, groups: &[u32], want: Want) -> Result<(), String> {
    if account.uid == 0 {
        return Ok(());
    }
    let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut at = PathBuf::from("/");
    let parts: Vec<_> = real
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    // Every folder on the way must be searchable (x).
    let mut meta = std::fs::metadata(&at).map_err(|e| format!("/: {e}"))?;
    for part in &parts {
        if bits(meta.mode(), meta.uid(), meta.gid(), account, groups) & X == 0 {
            return Err(refusal(path, &at, account, "enter"));
        }
        at.push(part);
        meta = std::fs::metadata(&at).map_err(|e| format!("{}: {e}", at.display()))?;
    }
    let have = bits(meta.mode(), meta.uid(), meta.gid(), account, groups);
    let need = match want {
        Want::Dir => R | X,
        Want::Read if meta.is_dir() => R | X,
        Want::Read => R,
    };
    if have & need != need {
        return Err(refusal(path, &at, account, "read"));
    }
    Ok(())
}

fn refusal(path: &Path, at: &Path, account: &Account, what: &str) -> String {
    format!(
        "{}: {} cannot {what} {} (its mode bits say no; ACLs are not consulted): the task would run as {} and fail, so it is refused; use a folder of yours or `chmod`/`chgrp` it",
        path.display(),
        account.name,
        at.display(),
        account.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn someone() -> Account {
        Account {
            uid: 4_000_000_123,
            gid: 4_000_000_123,
            name: "someone".into(),
            home: "/nonexistent".into(),
            shell: "/bin/sh".into(),
        }
    }

    #[test]
    fn the_owner_group_and_other_bits_decide_in_that_order() {
        let a = someone();
        assert_eq!(bits(0o750, a.uid, 0, &a, &[]), 7);
        assert_eq!(bits(0o750, 0, 77, &a, &[77]), 5);
        assert_eq!(bits(0o750, 0, 0, &a, &[77]), 0);
        // The owner's bits apply to the owner even when others have more.
        assert_eq!(bits(0o077, a.uid, 0, &a, &[]), 0);
    }

    #[test]
    fn a_folder_closed_on_the_way_refuses_and_names_that_folder() {
        let dir = tempfile::tempdir().unwrap();
        let closed = dir.path().join("closed");
        let inside = closed.join("work");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o755)).unwrap();
        let a = someone();
        let e = check(&inside, &a, &[], Want::Dir).unwrap_err();
        assert!(e.contains("cannot enter") && e.contains("closed"), "{e}");
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o711)).unwrap();
        assert!(check(&inside, &a, &[], Want::Dir).is_ok());
        let secret = inside.join("secret.txt");
        std::fs::write(&secret, "x").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = check(&secret, &a, &[], Want::Read).unwrap_err();
        assert!(e.contains("cannot read"), "{e}");
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(check(&secret, &a, &[], Want::Read).is_ok());
        let e = check(&inside.join("missing"), &a, &[], Want::Read).unwrap_err();
        assert!(e.contains("missing"), "{e}");
    }

    #[test]
    fn root_reaches_everything() {
        let mut root = someone();
        root.uid = 0;
        assert!(check(Path::new("/nonexistent/x"), &root, &[], Want::Dir).is_ok());
    }
}
