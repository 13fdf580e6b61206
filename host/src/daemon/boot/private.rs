//! Keeping the state dir private: who may own it, which modes are refused,
//! and what a failed file operation means (a full disk is not a permission
//! problem).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// Refuses a state dir owned by another user or writable by group or others;
/// the error says how to fix it.
pub fn check_dir(dir: &Path) -> Result<()> {
    let meta = std::fs::metadata(dir)
        .map_err(|e| anyhow::anyhow!("state dir {}: {}", dir.display(), describe(dir, &e)))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    judge(dir, meta.mode(), meta.uid(), me)
}

fn judge(dir: &Path, mode: u32, owner: u32, me: u32) -> Result<()> {
    if owner != me {
        bail!(
            "state dir {} is owned by uid {owner}, not by this user (uid {me}): whoever owns it can read and change the queue; `chown {me} {}` it, or choose another with --state-dir",
            dir.display(),
            dir.display()
        );
    }
    if mode & 0o022 != 0 {
        bail!(
            "state dir {} is writable by group or others (mode {:o}): anyone could replace the database or take its locks; run `chmod 700 {}`, or choose another with --state-dir",
            dir.display(),
            mode & 0o7777,
            dir.display()
        );
    }
    Ok(())
}

/// Sets each existing file to 0600 (a daemon's files from before umask 077).
pub fn tighten(files: &[PathBuf]) -> Result<()> {
    for f in files {
        match std::fs::metadata(f) {
            Ok(m) if m.mode() & 0o077 != 0 => {
                std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o600)).map_err(
                    |e| anyhow::anyhow!("cannot make {} private (chmod 600): {e}", f.display()),
                )?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// A file error in words: `no space left on /var` for ENOSPC (naming the
/// file system's mount point), else the error itself.
pub fn describe(path: &Path, e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => format!(
            "no space left on {} (the file system holding {}): free some space, or choose another --state-dir",
            mount_point(path).display(),
            path.display()
        ),
        Some(libc::EDQUOT) => format!(
            "disk quota exceeded on {}: free some space, or choose another --state-dir",
            mount_point(path).display()
        ),
        _ => e.to_string(),
    }
}

/// The mount point of the file system holding `path` (its longest existing
/// prefix), from /proc/self/mounts; `/` when unknown.
pub(in crate::daemon) fn mount_point(path: &Path) -> PathBuf {
    let real = crate::sandbox::paths::resolve(path);
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|m| PathBuf::from(m.replace("\\040", " ")))
        .filter(|m| real.starts_with(m))
        .max_by_key(|m| m.as_os_str().len())
        .unwrap_or_else(|| PathBuf::from("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_dir_of_another_user_or_writable_by_others_is_refused_with_the_fix() {
        let d = Path::new("/srv/nj");
        assert!(judge(d, 0o40700, 1000, 1000).is_ok());
        assert!(judge(d, 0o40755, 1000, 1000).is_ok());
        let err = judge(d, 0o40775, 1000, 1000).unwrap_err().to_string();
        assert!(
            err.contains("chmod 700 /srv/nj") && err.contains("775"),
            "{err}"
        );
        let err = judge(d, 0o40777, 1000, 1000).unwrap_err().to_string();
        assert!(err.contains("chmod 700"), "{err}");
        let err = judge(d, 0o40700, 0, 1000).unwrap_err().to_string();
        assert!(
            err.contains("owned by uid 0") && err.contains("chown 1000 /srv/nj"),
            "{err}"
        );
    }

    #[test]
    fn a_full_disk_is_named_as_such_not_as_a_permission_problem() {
        let dir = tempfile::tempdir().unwrap();
        let e = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let msg = describe(&dir.path().join("state"), &e);
        assert!(msg.starts_with("no space left on /"), "{msg}");
        assert!(!msg.contains("permission"), "{msg}");
        let other = describe(dir.path(), &std::io::Error::from_raw_os_error(libc::EACCES));
        assert!(other.contains("ermission denied"), "{other}");
    }

    #[test]
    fn old_files_are_made_private() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("nightjar.db");
        std::fs::write(&f, "").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        tighten(&[f.clone(), dir.path().join("missing")]).unwrap();
        assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o777, 0o600);
    }
}
