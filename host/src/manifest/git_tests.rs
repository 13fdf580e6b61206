//! Real repositories made by the tests, read by the real `git`.

use std::process::Command;

use super::*;

/// Runs git in `dir` as a person would (a test identity), asserting success; its stdout.
pub(crate) fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A repository on branch `exp` with one commit and a remote holding a token.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git_in(d, &["init", "-q", "-b", "exp"]);
    std::fs::write(d.join("train.py"), "print(1)\n").unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    git_in(d, &["add", "."]);
    git_in(d, &["commit", "-q", "-m", "first"]);
    git_in(
        d,
        &[
            "remote",
            "add",
            "origin",
            "https://someone:ghp_TOKEN@github.com/lab/exp.git",
        ],
    );
    dir
}

#[test]
fn a_clean_repository_gives_commit_branch_and_remote_without_credentials() {
    let dir = repo();
    let head = git_in(dir.path(), &["rev-parse", "HEAD"]);
    let g = capture(
        &dir.path().join("sub"),
        Duration::from_secs(10),
        Owned::own(),
        None,
    );
    assert_eq!(g.note, None);
    assert_eq!(g.repo.as_deref(), Some(dir.path()));
    assert_eq!(g.commit.as_deref(), Some(head.as_str()));
    assert_eq!(g.branch.as_deref(), Some("exp"));
    assert_eq!(g.remote.as_deref(), Some("https://github.com/lab/exp.git"));
    assert_eq!(
        (g.dirty, g.changed_files, g.diff_sha256),
        (Some(false), Some(0), None)
    );
}

#[test]
fn a_dirty_repository_gives_the_sha256_of_git_diff_head() {
    let dir = repo();
    std::fs::write(dir.path().join("train.py"), "print(2)\n").unwrap();
    // Untracked files do not make it dirty (git diff HEAD does not show them).
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    let g = capture(dir.path(), Duration::from_secs(10), Owned::own(), None);
    assert_eq!((g.dirty, g.changed_files), (Some(true), Some(1)));
    let diff = Command::new("git")
        .arg("-C")
        .arg(dir.path())
        .args([
            "diff",
            "HEAD",
            "--binary",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
        ])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(
        g.diff_sha256.as_deref(),
        Some(hex(&Sha256::digest(&diff)).as_str())
    );
    assert_eq!(g.diff_bytes, Some(diff.len() as u64));
    // Detached: no branch.
    std::fs::write(dir.path().join("train.py"), "print(1)\n").unwrap();
    git_in(dir.path(), &["checkout", "-q", "--detach"]);
    let g = capture(dir.path(), Duration::from_secs(10), Owned::own(), None);
    assert_eq!((g.branch, g.dirty), (None, Some(false)));
}

#[test]
fn a_folder_outside_any_repository_is_said_so_without_running_git() {
    let dir = tempfile::tempdir().unwrap();
    let g = capture(dir.path(), Duration::from_secs(10), Owned::own(), None);
    assert_eq!(g.note.as_deref(), Some("not a git repository"));
    assert_eq!(g.repo, None);
}

#[test]
fn a_diff_too_large_for_the_deadline_is_cut_off_in_time_and_said_so() {
    let dir = repo();
    // 1 GB of worktree change, sparse: no disk used, but git reads it all.
    let f = std::fs::File::options()
        .write(true)
        .open(dir.path().join("train.py"))
        .unwrap();
    f.set_len(1 << 30).unwrap();
    let t0 = Instant::now();
    let g = capture(dir.path(), Duration::from_millis(700), Owned::own(), None);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(g.dirty, Some(true));
    assert_eq!(g.diff_sha256, None);
    let note = g.note.unwrap();
    assert!(note.contains("did not finish within 700ms"), "{note}");
}

#[test]
fn a_linked_worktree_reads_its_main_repositorys_remote() {
    let dir = repo();
    let wt = tempfile::tempdir().unwrap();
    let path = wt.path().join("side");
    git_in(
        dir.path(),
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            path.to_str().unwrap(),
        ],
    );
    let g = capture(&path, Duration::from_secs(10), Owned::own(), None);
    assert_eq!(g.note, None);
    assert_eq!(g.branch.as_deref(), Some("side"));
    assert_eq!(g.repo.as_deref(), Some(path.as_path()));
    assert_eq!(g.remote.as_deref(), Some("https://github.com/lab/exp.git"));
}
