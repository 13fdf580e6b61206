//! Repositories changed in ways the witness of the first version missed:
//! each capture after the change must be git's answer now.

use super::tests::{MARGIN, git_in, hits, kept, repo, settle};
use super::*;

/// `repo()` with a second commit (so a ref can move back), settled.
fn two_commits() -> tempfile::TempDir {
    let dir = repo();
    let d = dir.path();
    std::fs::write(d.join("lib/util.py"), "x = 2\n").unwrap();
    git_in(d, &["commit", "-q", "-am", "second"]);
    settle();
    dir
}

/// Kept twice (the second from the cache), then `change`, then git's answer.
fn kept_then(d: &Path, change: impl FnOnce()) -> (GitCache, GitRecord, GitRecord) {
    let cache = GitCache::with_margin(MARGIN);
    let before = kept(&cache, d);
    kept(&cache, d);
    assert_eq!(hits(&cache), 1, "kept before the change");
    change();
    let after = kept(&cache, d);
    (cache, before, after)
}

#[test]
fn a_config_edited_through_a_symbolic_link_is_seen() {
    let dir = repo();
    let d = dir.path();
    std::fs::write(d.join("train.py"), "print(7)\n").unwrap();
    let dots = tempfile::tempdir().unwrap();
    let target = dots.path().join("config");
    std::fs::rename(d.join(".git/config"), &target).unwrap();
    std::os::unix::fs::symlink(&target, d.join(".git/config")).unwrap();
    settle();
    let (_, before, after) = kept_then(d, || {
        let mut text = std::fs::read_to_string(&target).unwrap();
        text.push_str("[diff]\n\tnoprefix = true\n");
        std::fs::write(&target, text).unwrap();
    });
    assert_ne!(
        after.diff_sha256, before.diff_sha256,
        "the diff has no a/ b/ now"
    );
}

#[test]
fn a_branch_moved_under_a_symbolic_ref_is_seen() {
    let dir = two_commits();
    let d = dir.path();
    git_in(d, &["symbolic-ref", "refs/heads/alias", "refs/heads/main"]);
    git_in(d, &["symbolic-ref", "HEAD", "refs/heads/alias"]);
    settle();
    let (_, before, after) = kept_then(d, || {
        git_in(d, &["update-ref", "refs/heads/main", "HEAD~1"]);
    });
    assert_ne!(after.commit, before.commit);
}

#[test]
fn a_head_written_without_the_space_after_ref_is_followed() {
    let dir = two_commits();
    let d = dir.path();
    std::fs::write(d.join(".git/HEAD"), "ref:refs/heads/main\n").unwrap();
    settle();
    let (_, before, after) = kept_then(d, || {
        git_in(d, &["update-ref", "refs/heads/main", "HEAD~1"]);
    });
    assert_ne!(after.commit, before.commit);
}

#[test]
fn a_replaced_head_commit_is_seen() {
    let dir = two_commits();
    let d = dir.path();
    std::fs::write(d.join("train.py"), "print(8)\n").unwrap();
    settle();
    let (_, before, after) = kept_then(d, || {
        git_in(d, &["replace", "HEAD", "HEAD~1"]);
    });
    assert_eq!(after.commit, before.commit, "the ref did not move");
    assert_ne!(
        after.diff_sha256, before.diff_sha256,
        "the tree compared did"
    );
}

#[test]
fn refs_in_another_repositorys_folder_are_asked_every_time() {
    let common = two_commits();
    let clone = tempfile::tempdir().unwrap();
    let b = clone.path().join("b");
    git_in(common.path(), &["clone", "-q", ".", b.to_str().unwrap()]);
    let shared = common.path().join(".git");
    std::fs::write(b.join(".git/commondir"), shared.to_str().unwrap()).unwrap();
    settle();
    let cache = GitCache::with_margin(MARGIN);
    let before = kept(&cache, &b);
    kept(&cache, &b);
    git_in(common.path(), &["update-ref", "refs/heads/main", "HEAD~1"]);
    let after = kept(&cache, &b);
    assert_ne!(after.commit, before.commit);
    assert_eq!(hits(&cache), 0, "`.git/commondir`: not kept");
}

#[test]
fn a_git_folder_git_passes_over_is_not_kept() {
    let dir = repo();
    let d = dir.path();
    std::fs::write(d.join("train.py"), "print(9)\n").unwrap();
    // No `objects`: git answers for the repository above.
    let sub = d.join("sub");
    std::fs::create_dir_all(sub.join(".git/refs")).unwrap();
    std::fs::write(sub.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    settle();
    let cache = GitCache::with_margin(MARGIN);
    let before = kept(&cache, &sub);
    assert_eq!(before.dirty, Some(true), "the outer repository's state");
    kept(&cache, &sub);
    git_in(d, &["commit", "-q", "-am", "outer"]);
    let after = kept(&cache, &sub);
    assert_eq!(after.dirty, Some(false));
    assert_eq!(hits(&cache), 0);
}

#[test]
fn a_config_include_written_later_is_seen() {
    let dir = repo();
    let d = dir.path();
    std::fs::write(d.join("train.py"), "print(10)\n").unwrap();
    let extra = tempfile::tempdir().unwrap();
    let inc = extra.path().join("later.cfg");
    git_in(d, &["config", "include.path", inc.to_str().unwrap()]);
    settle();
    let cache = GitCache::with_margin(MARGIN);
    let before = kept(&cache, d);
    kept(&cache, d);
    std::fs::write(&inc, "[diff]\n\tnoprefix = true\n").unwrap();
    let after = kept(&cache, d);
    assert_ne!(after.diff_sha256, before.diff_sha256);
    assert_eq!(hits(&cache), 0, "a config with an include is not kept");
}

#[test]
fn a_relative_diff_from_a_subfolder_is_its_own() {
    let dir = repo();
    let d = dir.path();
    git_in(d, &["config", "diff.relative", "true"]);
    std::fs::write(d.join("train.py"), "print(11)\n").unwrap();
    settle();
    let cache = GitCache::with_margin(MARGIN);
    let top = kept(&cache, d);
    kept(&cache, d);
    let sub = kept(&cache, &d.join("lib"));
    assert_ne!(
        sub.diff_sha256, top.diff_sha256,
        "lib/ has no change of its own"
    );
}

#[test]
fn the_index_listing_never_holds_more_than_its_bound() {
    let mut l = Listing::new(10, 1 << 20);
    let chunk = vec![b'a'; 64 << 10];
    for _ in 0..64 {
        l.feed(&chunk);
        assert!(l.held() <= 2 << 20, "held {} bytes", l.held());
    }
    assert!(l.end().is_none(), "one 4 MiB path: refused");
    let mut l = Listing::new(10, 1 << 20);
    l.feed(b"100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\ta b\x00100644 ");
    l.feed(b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\tc\0");
    let got = l.end().expect("two entries");
    assert_eq!(
        got,
        vec![
            (0o100644, PathBuf::from("a b")),
            (0o100644, PathBuf::from("c"))
        ]
    );
}

#[test]
fn a_witness_of_many_folders_is_bounded_by_the_deadline_too() {
    let dir = repo();
    let d = dir.path();
    let controls = Controls::take(d, &Owned::own()).expect("a plain repository");
    // Fewer entries than a look at the clock, each in five folders of its own.
    let tracked = Tracked::new(
        (0..100)
            .map(|i| (0o100644, PathBuf::from(format!("a{i}/b/c/d/e/f.py"))))
            .collect(),
    );
    assert!(Witness::take(d, controls, &tracked, Instant::now()).is_none());
}
