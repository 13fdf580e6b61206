//! Real repositories changed between captures the ways a user changes them;
//! each kept answer must be the one git gives without the cache.

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::*;
use crate::manifest::git::capture;

/// The margin the tests use (the daemon's is [`RACY`]): files must be this
/// old for a capture to be kept, so each test sleeps past it.
pub(super) const MARGIN: Duration = Duration::from_millis(150);

pub(super) fn settle() {
    std::thread::sleep(MARGIN + Duration::from_millis(60));
}

pub(super) use crate::manifest::git::repo_tests::git_in;

/// A committed repository with `train.py` and `lib/util.py`, settled.
pub(super) fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git_in(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join("train.py"), "print(1)\n").unwrap();
    std::fs::create_dir(d.join("lib")).unwrap();
    std::fs::write(d.join("lib/util.py"), "x = 1\n").unwrap();
    git_in(d, &["add", "."]);
    git_in(d, &["commit", "-q", "-m", "first"]);
    settle();
    dir
}

/// A capture through `cache`, checked against git asked without one.
pub(super) fn kept(cache: &GitCache, workdir: &Path) -> GitRecord {
    let t = Duration::from_secs(20);
    let got = capture(workdir, t, Owned::own(), Some(cache));
    let fresh = capture(workdir, t, Owned::own(), None);
    assert_eq!(got, fresh, "the cache's answer is git's");
    got
}

pub(super) fn hits(cache: &GitCache) -> u64 {
    cache.hits.load(Ordering::Relaxed)
}

#[test]
fn an_unchanged_repository_is_answered_from_the_kept_capture() {
    let dir = repo();
    let cache = GitCache::with_margin(MARGIN);
    let first = kept(&cache, dir.path());
    assert_eq!(hits(&cache), 0);
    assert_eq!(first.dirty, Some(false));
    let second = kept(&cache, &dir.path().join("lib"));
    assert_eq!(
        hits(&cache),
        1,
        "a second capture, from a subfolder too, is kept"
    );
    assert_eq!(second, first);
    kept(&cache, dir.path());
    assert_eq!(hits(&cache), 2);
}

#[test]
fn an_edit_of_the_same_size_in_place_and_by_rename_is_seen() {
    let dir = repo();
    let d = dir.path();
    let cache = GitCache::with_margin(MARGIN);
    let clean = kept(&cache, d);
    // Same length, written in place (an editor's save).
    std::fs::write(d.join("train.py"), "print(2)\n").unwrap();
    let edited = kept(&cache, d);
    assert_eq!(hits(&cache), 0, "an edit is never answered from the cache");
    assert_eq!((edited.dirty, edited.changed_files), (Some(true), Some(1)));
    assert_ne!(edited, clean);
    settle();
    // The capture just after the edit was kept too when it came over
    // MARGIN after the write (a loaded machine): this first look may be
    // its hit, and the next is one either way.
    kept(&cache, d);
    let settled = hits(&cache);
    kept(&cache, d);
    assert_eq!(hits(&cache), settled + 1, "kept once the edit has settled");
    // `sed -i`: a new file renamed over the old one, same size again.
    let status = Command::new("sed")
        .args(["-i", "s/2/3/"])
        .arg(d.join("train.py"))
        .status()
        .unwrap();
    assert!(status.success());
    let sedded = kept(&cache, d);
    assert_eq!(hits(&cache), settled + 1);
    assert_ne!(
        sedded.diff_sha256, edited.diff_sha256,
        "the new diff is hashed"
    );
}

#[test]
fn a_commit_a_branch_switch_and_a_staged_file_are_seen() {
    let dir = repo();
    let d = dir.path();
    let cache = GitCache::with_margin(MARGIN);
    let before = kept(&cache, d);
    std::fs::write(d.join("lib/util.py"), "x = 2\n").unwrap();
    git_in(d, &["commit", "-q", "-am", "second"]);
    settle();
    let after = kept(&cache, d);
    assert_ne!(after.commit, before.commit);
    assert_eq!(
        after.commit.as_deref(),
        Some(git_in(d, &["rev-parse", "HEAD"]).as_str())
    );
    kept(&cache, d);
    assert_eq!(hits(&cache), 1);
    git_in(d, &["checkout", "-q", "-b", "other"]);
    let other = kept(&cache, d);
    assert_eq!(other.branch.as_deref(), Some("other"));
    assert_eq!(hits(&cache), 1);
    settle();
    kept(&cache, d);
    // A new file staged: the index changed, the tracked list with it.
    std::fs::write(d.join("new.py"), "y = 1\n").unwrap();
    git_in(d, &["add", "new.py"]);
    let staged = kept(&cache, d);
    assert_eq!(staged.changed_files, Some(1));
    settle();
    kept(&cache, d);
    std::fs::write(d.join("new.py"), "y = 2\n").unwrap();
    let edited = kept(&cache, d);
    assert_eq!(
        edited.changed_files,
        Some(1),
        "an edit of the newly tracked file is seen"
    );
    assert_ne!(edited.diff_sha256, staged.diff_sha256);
}

#[test]
fn a_folder_replaced_by_a_link_to_the_same_files_is_seen() {
    let dir = repo();
    let d = dir.path();
    let cache = GitCache::with_margin(MARGIN);
    kept(&cache, d);
    // The same inode stays reachable at lib/util.py: only the folder moved.
    std::fs::rename(d.join("lib"), d.join("moved")).unwrap();
    std::os::unix::fs::symlink("moved", d.join("lib")).unwrap();
    let now = kept(&cache, d);
    assert_eq!(hits(&cache), 0);
    assert_eq!(
        now.dirty,
        Some(true),
        "git sees lib/util.py gone behind a link"
    );
}

#[test]
fn a_new_untracked_gitattributes_is_a_change() {
    let dir = repo();
    let d = dir.path();
    let cache = GitCache::with_margin(MARGIN);
    kept(&cache, d);
    settle();
    kept(&cache, d);
    assert_eq!(hits(&cache), 1);
    std::fs::write(d.join("lib/.gitattributes"), "*.py -diff\n").unwrap();
    kept(&cache, d);
    assert_eq!(
        hits(&cache),
        1,
        "the folder's attributes file is part of the witness"
    );
}

#[test]
fn a_fresh_edit_within_the_margin_is_never_kept() {
    let dir = repo();
    let d = dir.path();
    // The daemon's margin: the file below was written a moment ago.
    let cache = GitCache::default();
    std::fs::write(d.join("train.py"), "print(5)\n").unwrap();
    kept(&cache, d);
    kept(&cache, d);
    assert_eq!(hits(&cache), 0);
    assert!(cache.is_empty(), "a racy capture is not kept");
}

#[test]
fn repositories_with_a_submodule_are_asked_every_time() {
    let dir = repo();
    let d = dir.path();
    let head = git_in(d, &["rev-parse", "HEAD"]);
    let info = format!("160000,{head},vendored");
    git_in(d, &["update-index", "--add", "--cacheinfo", &info]);
    git_in(d, &["commit", "-q", "-m", "with a gitlink"]);
    settle();
    let cache = GitCache::with_margin(MARGIN);
    kept(&cache, d);
    kept(&cache, d);
    assert_eq!(hits(&cache), 0);
    assert!(cache.is_empty());
}

#[test]
fn a_worktree_is_asked_every_time() {
    let dir = repo();
    let d = dir.path();
    let wt = tempfile::tempdir().unwrap();
    let path = wt.path().join("wt");
    git_in(d, &["worktree", "add", "-q", path.to_str().unwrap()]);
    settle();
    let cache = GitCache::with_margin(MARGIN);
    let rec = kept(&cache, &path);
    assert_eq!(rec.dirty, Some(false));
    kept(&cache, &path);
    assert_eq!(hits(&cache), 0, "`.git` is a file there: not kept");
}

#[test]
fn at_most_max_repos_are_kept_the_least_recently_used_leaving_first() {
    let repos: Vec<_> = (0..MAX_REPOS + 1).map(|_| repo()).collect();
    let cache = GitCache::with_margin(MARGIN);
    for r in &repos {
        kept(&cache, r.path());
    }
    assert_eq!(cache.len(), MAX_REPOS);
    kept(&cache, repos[0].path());
    assert_eq!(
        hits(&cache),
        0,
        "the first, least recently used, was let go"
    );
    kept(&cache, repos[MAX_REPOS].path());
    assert_eq!(hits(&cache), 1, "the last is still kept");
}

#[test]
fn a_witness_not_taken_by_the_deadline_keeps_nothing() {
    let dir = repo();
    let d = dir.path();
    let controls = Controls::take(d, &Owned::own()).expect("a plain repository");
    let tracked = Tracked::new(
        (0..600)
            .map(|i| (0o100644, PathBuf::from(format!("f{i}"))))
            .collect(),
    );
    let past = Instant::now();
    assert!(Witness::take(d, controls, &tracked, past).is_none());
    let controls = Controls::take(d, &Owned::own()).expect("a plain repository");
    let later = Instant::now() + Duration::from_secs(60);
    assert!(Witness::take(d, controls, &tracked, later).is_some());
}

#[test]
fn the_index_listing_is_refused_past_its_entry_or_byte_bound() {
    let dir = repo();
    let d = dir.path();
    let deadline = Instant::now() + Duration::from_secs(20);
    let all = tracked(d, deadline, (10, 1 << 20), Owned::own()).expect("two entries");
    let mut paths: Vec<_> = all.iter().map(|(m, p)| (*m, p.clone())).collect();
    paths.sort();
    assert_eq!(
        paths,
        vec![
            (0o100644, PathBuf::from("lib/util.py")),
            (0o100644, PathBuf::from("train.py")),
        ]
    );
    assert!(tracked(d, deadline, (1, 1 << 20), Owned::own()).is_none());
    assert!(tracked(d, deadline, (10, 40), Owned::own()).is_none());
}
