//! The daemon makes and deletes things under its state dir only through a
//! cap-std `Dir` opened on it: a relative path with `..`, an absolute path,
//! or a symlink leading out of the state dir is refused by the capability
//! itself, whatever a task has done to its folders meanwhile.

use std::path::Path;

use anyhow::{Context, Result};
use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// A capability on the state dir.
pub struct StateDir {
    dir: Dir,
}

impl StateDir {
    /// Opens the state dir at `path`.
    pub fn open(path: &Path) -> Result<StateDir> {
        let dir = Dir::open_ambient_dir(path, ambient_authority())
            .with_context(|| format!("open state dir {}", path.display()))?;
        Ok(StateDir { dir })
    }

    /// Creates `rel` (relative to the state dir) and its parents.
    pub fn make(&self, rel: &Path) -> std::io::Result<()> {
        self.dir.create_dir_all(rel)
    }

    /// Writes `bytes` to the file `rel` atomically (a temporary file beside
    /// it, renamed into place), making its folder first. The file is
    /// written through a capability on its folder: one path resolution,
    /// not one per operation (each costs a walk of the path's components).
    pub fn write(&self, rel: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let name = rel
            .file_name()
            .ok_or_else(|| std::io::Error::other("no file name"))?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let folder = if parent.as_os_str().is_empty() {
            self.dir.try_clone()?
        } else {
            self.dir.create_dir_all(parent)?;
            self.dir.open_dir(parent)?
        };
        let tmp = format!(".{}.tmp", name.to_string_lossy());
        folder.write(&tmp, bytes)?;
        folder.rename(&tmp, &folder, name)
    }

    /// Deletes `rel` and everything in it; nothing there is fine. The
    /// removal is iterative and never follows a link
    /// ([`crate::privsep::remove::remove_tree`]): a task's tree of any depth
    /// in its run folder cannot overflow the daemon's stack.
    pub fn remove_all(&self, rel: &Path) -> std::io::Result<()> {
        let Some(name) = rel.file_name() else {
            return Err(std::io::Error::other(format!(
                "{} names no folder to remove",
                rel.display()
            )));
        };
        let parent = match rel.parent() {
            Some(p) if !p.as_os_str().is_empty() => match self.dir.open_dir(p) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                other => other?,
            },
            _ => self.dir.try_clone()?,
        };
        crate::privsep::remove::remove_tree(&parent, Path::new(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_outside_the_state_dir_can_be_made_or_deleted() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state");
        let outside = root.path().join("outside");
        std::fs::create_dir_all(state.join("scratch")).unwrap();
        std::fs::create_dir_all(outside.join("keep")).unwrap();
        let s = StateDir::open(&state).unwrap();
        s.make(Path::new("scratch/7")).unwrap();
        assert!(state.join("scratch/7").is_dir());
        assert!(s.make(Path::new("../outside/new")).is_err());
        assert!(s.make(&outside.join("abs")).is_err());
        // A task swapped its scratch folder for a symlink out of the state dir.
        std::os::unix::fs::symlink(&outside, state.join("scratch/8")).unwrap();
        assert!(s.make(Path::new("scratch/8/keep/x")).is_err());
        // Writing follows the same rule.
        assert!(s.write(Path::new("scratch/8/keep/x"), b"x").is_err());
        s.write(Path::new("runs/3/manifest.json"), b"{}").unwrap();
        assert_eq!(
            std::fs::read(state.join("runs/3/manifest.json")).unwrap(),
            b"{}"
        );
        s.remove_all(Path::new("scratch/8")).unwrap();
        assert!(outside.join("keep").is_dir(), "the target is untouched");
        assert!(s.remove_all(Path::new("../outside")).is_err());
        assert!(outside.is_dir());
        s.remove_all(Path::new("scratch/7")).unwrap();
        s.remove_all(Path::new("scratch/7")).unwrap();
        assert!(!state.join("scratch/7").exists());
    }
}
