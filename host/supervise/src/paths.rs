//! Where a path really leads: `..` and symlinks resolved as far as the path
//! exists, the rest folded lexically. Used to keep task output inside the
//! configured `output_roots`, at submit (daemon) and when the supervisor
//! makes the folder.

use std::path::{Component, Path, PathBuf};

/// Resolves `path` (absolute) the way the kernel would walk it: every
/// existing prefix through its symlinks, `..` of a missing part lexically.
pub fn resolve(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    let mut exists = true;
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if exists {
                    match std::fs::canonicalize(&out) {
                        Ok(real) => out = real,
                        Err(_) => {
                            exists = false;
                            // A dangling symlink leads where it points, not here.
                            if let Ok(target) = std::fs::read_link(&out) {
                                out.pop();
                                out = lexical(&out.join(target));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// `path` with `.` and `..` folded away, without looking at the disk.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// `Ok(())` when `roots` is empty or `path` resolves inside one of them;
/// else an error naming the path, where it leads and the roots.
pub fn check_within(path: &Path, roots: &[PathBuf]) -> Result<(), String> {
    if roots.is_empty() {
        return Ok(());
    }
    let real = resolve(path);
    if roots.iter().any(|r| real.starts_with(resolve(r))) {
        return Ok(());
    }
    let list: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    Err(format!(
        "output folder {} resolves to {}, outside output_roots ({}): choose an output under one of them, or ask the admin to add a root",
        path.display(),
        real.display(),
        list.join(", ")
    ))
}

/// Makes the task's output folder, after checking it against `roots`, with
/// the task's file-mode mask (the daemon's 077 is for its own files).
pub fn make_output(out: &Path, roots: &[PathBuf], umask: Option<u32>) -> Result<(), String> {
    check_within(out, roots)?;
    let old = umask.map(crate::sys::set_umask);
    let made = std::fs::create_dir_all(out);
    if let Some(old) = old {
        crate::sys::set_umask(old);
    }
    made.map_err(|e| format!("cannot create output folder {}: {e}", out.display()))?;
    // Checked again once it exists: a symlink swapped in meanwhile is caught.
    check_within(out, roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_symlinks_cannot_leave_a_root() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(root.join("ok")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("escape")).unwrap();
        let roots = vec![root.clone()];
        assert!(check_within(&root.join("ok/new/deeper"), &roots).is_ok());
        assert!(check_within(&root.join("missing/../ok"), &roots).is_ok());
        let err = check_within(&root.join("../../../etc/nightjar-pwned"), &roots).unwrap_err();
        assert!(
            err.contains("/etc/nightjar-pwned") && err.contains("outside output_roots"),
            "{err}"
        );
        let err = check_within(&root.join("escape/x"), &roots).unwrap_err();
        assert!(err.contains("resolves to /etc/x"), "{err}");
        assert!(check_within(&root.join("ok/../escape"), &roots).is_err());
        std::os::unix::fs::symlink(base.join("elsewhere"), root.join("dangling")).unwrap();
        assert!(check_within(&root.join("dangling/x"), &roots).is_err());
        assert!(check_within(Path::new("/anywhere"), &[]).is_ok());
    }
}
