//! The workdir's git state, through the `git` binary under one deadline for
//! all its calls: top folder, commit, branch, remote, whether tracked files
//! differ from HEAD, and a sha256 of `git diff HEAD` streamed (a diff of any
//! size is hashed as it comes, never held).
//!
//! git runs as the task's owner (a system daemon's capture thread acts as
//! them, and git drops to them before it executes), with optional locks off (a capture never
//! takes the index lock from the task's own git), no pager, no prompt, no
//! fsmonitor hook, no external diff or textconv driver.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::privsep::Owned;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::sys::bounded;
use nightjar_core::api::manifest::GitRecord;

/// The git state of the repository `workdir` is in; what cannot be learnt
/// within `timeout` (all calls together) is left out with a note. With
/// `kept`, a state captured before is reused while nothing it was read from
/// has changed ([`super::git_cache`]).
pub fn capture(
    workdir: &Path,
    timeout: Duration,
    owned: Owned<'_>,
    kept: Option<&super::git_cache::GitCache>,
) -> GitRecord {
    let deadline = Instant::now() + timeout;
    // No `.git` in the workdir or above it: not a repository, and no git
    // process is started at all (most workdirs of a queue of `true` runs).
    let Some(top) = find_repo(workdir) else {
        return GitRecord {
            note: Some("not a git repository".into()),
            ..GitRecord::default()
        };
    };
    let at = At {
        top: &top,
        workdir,
        deadline,
        timeout,
    };
    match kept {
        Some(k) => k.capture(&at, owned),
        None => fresh(&at, owned),
    }
}

/// Where and until when one capture asks git.
pub(super) struct At<'a> {
    /// The repository's top folder.
    pub top: &'a Path,
    /// The task's workdir in it (git runs there).
    pub workdir: &'a Path,
    /// When every git call of the capture must be done.
    pub deadline: Instant,
    /// The whole allowance (for notes).
    pub timeout: Duration,
}

/// The repository's state, asked of git now.
pub(super) fn fresh(at: &At<'_>, owned: Owned<'_>) -> GitRecord {
    let mut rec = GitRecord {
        repo: Some(at.top.to_path_buf()),
        ..GitRecord::default()
    };
    if let Err(note) = fill(&mut rec, at, owned) {
        rec.note = Some(note);
    }
    rec
}

fn fill(rec: &mut GitRecord, at: &At<'_>, owned: Owned<'_>) -> Result<(), String> {
    let (top, workdir, deadline, timeout) = (at.top, at.workdir, at.deadline, at.timeout);
    let mut st = StatusLines::default();
    let status = bounded::run(
        git(workdir, owned)?.args([
            "status",
            "--porcelain=v2",
            "--branch",
            "--untracked-files=no",
        ]),
        deadline,
        |b| st.feed(b),
    )
    .map_err(|e| spawn_note(&e))?;
    if status.timed_out {
        return Err(timed_out("status", timeout));
    }
    if !status.ok() {
        return Err(format!("git status failed: {}", clip(status.first_line())));
    }
    st.end();
    rec.commit = st.commit.filter(|c| c != "(initial)");
    rec.branch = st.branch.filter(|b| b != "(detached)");
    let changed = st.changed;
    rec.changed_files = Some(changed);
    rec.dirty = Some(changed > 0);
    // Read from the repository's config file: a git process less per capture.
    rec.remote = remote_url(top).map(|u| without_credentials(&u));
    if changed == 0 {
        return Ok(());
    }
    if rec.commit.is_none() {
        return Err("no commit yet: the changes are not hashed".into());
    }
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    let diff = bounded::run(
        git(workdir, owned)?.args([
            "diff",
            "HEAD",
            "--binary",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
        ]),
        deadline,
        |b| {
            hasher.update(b);
            bytes += b.len() as u64;
        },
    )
    .map_err(|e| spawn_note(&e))?;
    if diff.timed_out {
        return Err(format!(
            "git diff HEAD did not finish within {} ({} read): the diff is not hashed; raise [manifest] git_timeout",
            humantime::format_duration(timeout),
            bytesize::ByteSize::b(bytes)
        ));
    }
    if !diff.ok() {
        return Err(format!("git diff failed: {}", clip(diff.first_line())));
    }
    rec.diff_sha256 = Some(hex(&hasher.finalize()));
    rec.diff_bytes = Some(bytes);
    Ok(())
}

/// The URL of `origin`, else of the first remote, from the config file of
/// the repository at `top` (a worktree's or submodule's `.git` file points
/// to its git folder; a linked worktree shares its main repository's config).
fn remote_url(top: &Path) -> Option<String> {
    let dotgit = top.join(".git");
    let gitdir = if dotgit.is_file() {
        let text = read_small(&dotgit)?;
        let rel = text
            .lines()
            .next()?
            .strip_prefix("gitdir:")?
            .trim()
            .to_string();
        top.join(rel)
    } else {
        dotgit
    };
    let common = match read_small(&gitdir.join("commondir")) {
        Some(c) => gitdir.join(c.trim()),
        None => gitdir,
    };
    pick_remote(&read_small(&common.join("config"))?)
}

/// A small text file (at most 1 MiB), or nothing.
pub(super) fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    // A regular file only (a FIFO as `.git/config` would block), opened once.
    crate::privsep::open::regular(path, true)
        .ok()?
        .0
        .take(1 << 20)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// The folder holding `.git` (a folder, or a file in a worktree or
/// submodule) at `workdir` or above it.
fn find_repo(workdir: &Path) -> Option<PathBuf> {
    workdir
        .ancestors()
        .find(|p| crate::privsep::open::metadata(&p.join(".git"), false).is_ok())
        .map(Path::to_path_buf)
}

/// `git -C workdir` with the capture's settings.
pub(super) fn git(workdir: &Path, owned: Owned<'_>) -> Result<Command, String> {
    let mut c = owned.command("git")?;
    c.arg("-C")
        .arg(workdir)
        .args(["--no-optional-locks", "-c", "core.fsmonitor=false"])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C");
    // The daemon's own GIT_DIR (or the like) must not redirect the question.
    for v in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_EXTERNAL_DIFF",
        "GIT_CEILING_DIRECTORIES",
    ] {
        c.env_remove(v);
    }
    Ok(c)
}

fn timed_out(what: &str, timeout: Duration) -> String {
    format!(
        "git {what} did not answer within {}: killed; raise [manifest] git_timeout or look at the repository",
        humantime::format_duration(timeout)
    )
}

/// `git status --porcelain=v2 --branch` read as it streams: the branch
/// headers kept, the entries (one per changed tracked file) only counted,
/// so a repository with a million changed files costs no memory.
#[derive(Default)]
struct StatusLines {
    line: Vec<u8>,
    commit: Option<String>,
    branch: Option<String>,
    changed: u64,
}

impl StatusLines {
    /// The longest part of a line kept: headers are short, entries are only counted.
    const KEPT: usize = 1024;

    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end();
            } else if self.line.len() < Self::KEPT {
                self.line.push(b);
            }
        }
    }

    fn end(&mut self) {
        if self.line.is_empty() {
            return;
        }
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if let Some(oid) = line.strip_prefix("# branch.oid ") {
            self.commit = Some(oid.to_string());
        } else if let Some(head) = line.strip_prefix("# branch.head ") {
            self.branch = Some(head.to_string());
        } else if !line.starts_with('#') {
            self.changed += 1;
        }
    }
}

fn spawn_note(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        "git is not installed (no `git` on the daemon's PATH)".into()
    } else {
        format!("cannot run git: {e}")
    }
}

/// `origin`'s URL, else the first remote's, from the text of a git config
/// file (`[remote "NAME"]` sections, `url = VALUE`; quotes and comments as
/// git writes them).
fn pick_remote(config: &str) -> Option<String> {
    let mut section: Option<String> = None;
    let mut urls: Vec<(String, String)> = Vec::new();
    for line in config.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            section = l
                .strip_prefix("[remote")
                .and_then(|r| r.trim().strip_suffix(']'))
                .map(|n| n.trim().trim_matches('"').to_string());
            continue;
        }
        let Some(name) = &section else { continue };
        let Some((k, v)) = l.split_once('=') else {
            continue;
        };
        if k.trim().eq_ignore_ascii_case("url") {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .unwrap_or(v);
            urls.push((name.clone(), v.to_string()));
        }
    }
    urls.iter()
        .find(|(n, _)| n == "origin")
        .or_else(|| urls.first())
        .map(|(_, u)| u.clone())
}

/// A remote URL with any `user:password@` removed (`https://TOKEN@host/x`
/// is a common way to keep a token; `git@host:x` names no secret).
pub fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

fn clip(s: &str) -> String {
    s.chars().take(300).collect()
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_cut_out_of_remote_urls() {
        assert_eq!(
            without_credentials("https://user:ghp_secret@github.com/lab/x.git"),
            "https://github.com/lab/x.git"
        );
        assert_eq!(
            without_credentials("https://tok@en@host/a@b"),
            "https://host/a@b"
        );
        assert_eq!(
            without_credentials("git@github.com:lab/x.git"),
            "git@github.com:lab/x.git"
        );
        assert_eq!(
            without_credentials("ssh://git@host/x"),
            "ssh://host/x",
            "the user part goes too: it may be a token"
        );
    }

    #[test]
    fn origin_wins_over_other_remotes() {
        let config = "[core]\n\tbare = false\n[remote \"backup\"]\n\turl = /srv/b.git\n[remote \"origin\"]\n\turl = \"https://h/o.git\"\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n";
        assert_eq!(pick_remote(config).as_deref(), Some("https://h/o.git"));
        assert_eq!(
            pick_remote("[remote \"up\"]\nurl=u\n").as_deref(),
            Some("u"),
            "no origin: the first"
        );
        assert_eq!(pick_remote("[core]\nurl = x\n"), None);
    }
}

#[cfg(test)]
#[path = "git_tests.rs"]
pub(super) mod repo_tests;
