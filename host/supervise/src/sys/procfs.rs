//! What the kernel lists under `/proc` that the daemon reads: the process
//! tree (a run's descendants) and the file locks (`/proc/locks`).

use std::collections::HashMap;

/// Every live descendant of `root`, read from /proc.
pub fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some(ppid) = parent_of(pid) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        if let Some(kids) = children.get(&p) {
            for &k in kids {
                out.push(k);
                stack.push(k);
            }
        }
    }
    out
}

/// The parent pid of `pid` from /proc/PID/stat (None if gone or a zombie).
pub fn parent_of(pid: i32) -> Option<i32> {
    // Bytes: a process names itself anything, UTF-8 or not (a task that
    // did so was missing from its run's tree, and outlived a cancel).
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parens; fields follow the last ')'.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = String::from_utf8_lossy(stat.get(close + 2..)?);
    let mut fields = rest.split(' ');
    let state = fields.next()?;
    if state == "Z" {
        return None;
    }
    fields.next()?.parse().ok()
}

/// One lock of `/proc/locks` on a given file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLock {
    /// `FLOCK`, `OFDLCK` or `POSIX`.
    pub kind: String,
    /// Its holder (`-1` for an open-file-description lock: no one process).
    pub pid: i32,
    /// The first byte held.
    pub start: i64,
    /// The last byte held (`i64::MAX` for "to the end of the file").
    pub end: i64,
}

/// The locks the kernel lists in `/proc/locks` on the file at `path`.
pub fn locks_on(path: &std::path::Path) -> Vec<FileLock> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Vec::new();
    };
    let text = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    parse_locks(&text, meta.dev(), meta.ino())
}

/// The lines of a `/proc/locks` text on the file (`dev`, `ino`):
/// "N: KIND ADVISORY|MANDATORY READ|WRITE PID MAJ:MIN:INODE START END".
fn parse_locks(text: &str, dev: u64, ino: u64) -> Vec<FileLock> {
    let want = format!("{:02x}:{:02x}:{ino}", libc::major(dev), libc::minor(dev));
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let at = f
                .iter()
                .position(|w| matches!(*w, "FLOCK" | "OFDLCK" | "POSIX"))?;
            (f.get(at + 4)? == &want.as_str()).then_some(())?;
            Some(FileLock {
                kind: f[at].to_string(),
                pid: f.get(at + 3)?.parse().ok()?,
                start: f.get(at + 5)?.parse().ok()?,
                end: f.get(at + 6)?.parse().unwrap_or(i64::MAX),
            })
        })
        .collect()
}

#[cfg(test)]
mod tree_tests {
    use super::*;

    #[test]
    fn a_child_whose_name_is_not_utf8_is_still_a_descendant() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"sl\xffeep"));
        std::fs::copy("/bin/sleep", &odd).unwrap();
        let mut child = std::process::Command::new(&odd).arg("5").spawn().unwrap();
        let pid = child.id() as i32;
        // Until the exec has named the child after the file.
        for _ in 0..200 {
            let comm = std::fs::read(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.contains(&0xff) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let me = std::process::id() as i32;
        assert_eq!(parent_of(pid), Some(me));
        assert!(descendants(me).contains(&pid));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[cfg(test)]
mod locks_tests {
    use super::*;

    #[test]
    fn proc_locks_lines_on_the_file_are_read_whatever_their_kind_and_range() {
        let dev = libc::makedev(0xfd, 1);
        let text = "1: OFDLCK ADVISORY  WRITE -1 fd:01:4242 7 7\n\
                    2: OFDLCK ADVISORY  WRITE -1 fd:01:9999 8 8\n\
                    3: FLOCK  ADVISORY  WRITE 12 fd:01:4242 0 EOF\n\
                    4: OFDLCK ADVISORY  WRITE -1 fd:01:4242 9223372036854775806 EOF\n";
        let got = parse_locks(text, dev, 4242);
        assert_eq!(got.len(), 3);
        assert_eq!(
            (got[0].kind.as_str(), got[0].start, got[0].end),
            ("OFDLCK", 7, 7)
        );
        assert_eq!(
            (got[1].kind.as_str(), got[1].pid, got[1].end),
            ("FLOCK", 12, i64::MAX)
        );
        assert_eq!(got[2].start, 9_223_372_036_854_775_806);
    }
}
