//! The output manifest: every regular file of a run's output folder with its
//! size and sha256. Read through a cap-std `Dir` on the folder, so nothing
//! outside it is reached: symbolic links are listed as skipped, never
//! followed; files are streamed through the hash (memory stays flat for a
//! file of any size). A file with more than one hard link is reported: its
//! content may live outside the folder too, so validators are not shown it.

use std::io::Read;
use std::path::Path;

use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};
use sha2::{Digest, Sha256};

use crate::plugins::validator::OutputFile;

/// Files listed at most; the rest are counted.
pub const MAX_FILES: usize = 10_000;

/// Folder depth walked at most.
const MAX_DEPTH: usize = 32;

/// What the walk found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Regular files, sorted by path.
    pub files: Vec<OutputFile>,
    /// Regular files past [`MAX_FILES`], not listed.
    pub omitted: u32,
    /// Files with more than one hard link: (path, links).
    pub linked: Vec<(String, u64)>,
    /// Entries that are not regular files or folders (symbolic links,
    /// sockets, devices), or folders deeper than the walk goes.
    pub skipped: Vec<String>,
}

/// Walks `root` (which must be a real folder) and hashes its files.
pub fn walk(root: &Path) -> std::io::Result<Manifest> {
    let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority())?;
    let mut m = Manifest::default();
    let mut stack = vec![(dir, String::new(), 0usize)];
    let mut buf = vec![0u8; 64 << 10];
    while let Some((dir, prefix, depth)) = stack.pop() {
        for entry in dir.entries()? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{prefix}{name}");
            let kind = entry.file_type()?;
            if kind.is_dir() {
                if depth + 1 >= MAX_DEPTH {
                    m.skipped
                        .push(format!("{path}/ (deeper than {MAX_DEPTH} folders)"));
                } else {
                    stack.push((entry.open_dir()?, format!("{path}/"), depth + 1));
                }
                continue;
            }
            if !kind.is_file() {
                m.skipped.push(path);
                continue;
            }
            if m.files.len() >= MAX_FILES {
                m.omitted += 1;
                continue;
            }
            let mut opts = OpenOptions::new();
            opts.read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY);
            let mut file = entry.open_with(&opts)?;
            let meta = file.metadata()?;
            if !meta.is_file() {
                m.skipped.push(path);
                continue;
            }
            if meta.nlink() > 1 {
                m.linked.push((path.clone(), meta.nlink()));
            }
            let mut h = Sha256::new();
            let mut size = 0u64;
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                size += n as u64;
                h.update(&buf[..n]);
            }
            m.files.push(OutputFile {
                path,
                size,
                sha256: format!("{:x}", h.finalize()),
            });
        }
    }
    m.files.sort_by(|a, b| a.path.cmp(&b.path));
    m.skipped.sort();
    m.linked.sort();
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_hashed_links_are_not_followed_and_hard_links_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir_all(out.join("sub/deeper")).unwrap();
        std::fs::write(out.join("a.txt"), b"abc").unwrap();
        std::fs::write(out.join("sub/deeper/b.bin"), b"").unwrap();
        std::os::unix::fs::symlink("/etc", out.join("etc-link")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", out.join("passwd-link")).unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, b"secret").unwrap();
        std::fs::hard_link(&outside, out.join("hard")).unwrap();
        let m = walk(&out).unwrap();
        let paths: Vec<&str> = m.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["a.txt", "hard", "sub/deeper/b.bin"]);
        assert_eq!(
            m.files[0].sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!((m.files[0].size, m.files[2].size), (3, 0));
        assert_eq!(m.skipped, vec!["etc-link", "passwd-link"]);
        assert_eq!(m.linked, vec![("hard".to_string(), 2)]);
    }

    #[test]
    fn past_the_cap_files_are_counted_not_listed() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_FILES + 3) {
            std::fs::write(dir.path().join(format!("f{i}")), b"").unwrap();
        }
        let m = walk(dir.path()).unwrap();
        assert_eq!((m.files.len(), m.omitted), (MAX_FILES, 3));
    }
}
