//! The output manifest: every regular file of a run's output folder with its
//! size and sha256. Read through a cap-std `Dir` on the folder, so nothing
//! outside it is reached: symbolic links are listed as skipped, never
//! followed; files are streamed through the hash (memory stays flat for a
//! file of any size). A file with more than one hard link is reported: its
//! content may live outside the folder too, so validators are not shown it.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;

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
    /// Of those, the FIFOs, sockets and devices: (path, kind). Opening one
    /// can block or act, so validators are not shown a folder holding one.
    pub special: Vec<(String, &'static str)>,
}

/// Walks `root`, which must be a real folder (opened by
/// [`crate::privsep::open::real_dir`]: no link on its way), and hashes its
/// files. Call it on a thread acting as the folder's owner.
pub fn walk(root: &Path) -> std::io::Result<Manifest> {
    let dir = crate::privsep::open::real_dir(root).map_err(std::io::Error::other)?;
    walk_dir(dir)
}

/// Walks the folder `dir` and hashes its files.
///
/// Depth first, a folder opened only when its turn comes: the folders
/// waiting hold their parent's handle (shared), so the open descriptors are
/// bounded by the depth, not by how many folders a task made (100,000
/// empty folders once ran the daemon out of descriptors).
pub fn walk_dir(dir: Dir) -> std::io::Result<Manifest> {
    let mut m = Manifest::default();
    // (the folder holding it, its name there, its path + "/", its depth)
    let mut stack: Vec<(Rc<Dir>, OsString, String, usize)> = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut next = Some((Rc::new(dir), String::new(), 0usize));
    while let Some((dir, prefix, depth)) = next.take() {
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
                    stack.push((
                        Rc::clone(&dir),
                        entry.file_name(),
                        format!("{path}/"),
                        depth + 1,
                    ));
                }
                continue;
            }
            if !kind.is_file() {
                use cap_std::fs::FileTypeExt;
                let special = if kind.is_fifo() {
                    Some("fifo")
                } else if kind.is_socket() {
                    Some("socket")
                } else if kind.is_char_device() || kind.is_block_device() {
                    Some("device")
                } else {
                    None
                };
                if let Some(k) = special {
                    m.special.push((path.clone(), k));
                }
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
        drop(dir);
        if let Some((parent, name, prefix, depth)) = stack.pop() {
            next = Some((Rc::new(parent.open_dir(&name)?), prefix, depth));
        }
    }
    m.files.sort_by(|a, b| a.path.cmp(&b.path));
    m.skipped.sort();
    m.linked.sort();
    m.special.sort();
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

    /// Open descriptors of this process.
    fn open_fds() -> usize {
        std::fs::read_dir("/proc/self/fd").unwrap().count()
    }

    #[test]
    fn many_folders_are_walked_with_few_descriptors_open() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..3000 {
            let d = dir.path().join(format!("d{i}"));
            std::fs::create_dir(&d).unwrap();
            if i % 1000 == 0 {
                std::fs::write(d.join("f"), b"x").unwrap();
            }
        }
        // Lower the soft limit so that one descriptor per folder fails.
        let (soft, hard) = crate::sys::rlimit(libc::RLIMIT_NOFILE).unwrap();
        let lower = soft.min(open_fds() as u64 + 2000);
        crate::sys::set_rlimit(libc::RLIMIT_NOFILE, lower, hard).unwrap();
        let m = walk(dir.path());
        crate::sys::set_rlimit(libc::RLIMIT_NOFILE, soft, hard).unwrap();
        let m = m.expect("the walk does not run out of descriptors");
        assert_eq!(m.files.len(), 3);
    }
}
