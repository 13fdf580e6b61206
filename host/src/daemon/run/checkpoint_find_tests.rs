use std::time::{Duration, SystemTime};

use super::*;

/// A file at `dir/name` last modified `age` before `now`.
fn file(dir: &Path, name: &str, now: SystemTime, age: u64) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let f = std::fs::File::create(&p).unwrap();
    f.set_modified(now - Duration::from_secs(age)).unwrap();
    p
}

fn spec(settle: u64, marker: Option<&str>) -> CheckpointSpec {
    CheckpointSpec {
        pattern: String::new(),
        resume: None,
        settle: Duration::from_secs(settle),
        marker: marker.map(String::from),
        signal: "SIGTERM".into(),
        grace: None,
    }
}

fn find(pattern: &Path, spec: &CheckpointSpec, now: SystemTime) -> Found {
    newest_complete(&pattern.to_string_lossy(), spec, now)
}

#[test]
fn the_newest_settled_checkpoint_is_chosen() {
    let d = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    file(d.path(), "ckpt/step-1.pt", now, 300);
    let settled = file(d.path(), "ckpt/step-2.pt", now, 60);
    file(d.path(), "ckpt/step-3.pt", now, 2); // still being written
    file(d.path(), "ckpt/notes.txt", now, 1);
    let f = find(&d.path().join("ckpt/*.pt"), &spec(10, None), now);
    assert_eq!(f.path.as_deref(), Some(settled.as_path()), "{}", f.note);
    assert!(
        f.note.contains("newest of 3") && f.note.contains("1 newer not complete yet"),
        "{}",
        f.note
    );
    // Once it has settled too, the newest one wins.
    let later = now + Duration::from_secs(30);
    let f = find(&d.path().join("ckpt/*.pt"), &spec(10, None), later);
    assert!(f.path.unwrap().ends_with("step-3.pt"));
}

#[test]
fn with_a_marker_only_marked_checkpoints_count_however_old() {
    let d = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    // Marked a second ago: complete at once, no settling needed.
    let marked = file(d.path(), "ckpt/step-1.pt", now, 1);
    file(d.path(), "ckpt/step-1.pt.done", now, 1);
    // Newer but torn (no marker), and an old one never marked.
    file(d.path(), "ckpt/step-2.pt", now, 0);
    file(d.path(), "ckpt/step-0.pt", now, 3600);
    let f = find(&d.path().join("ckpt/*"), &spec(10, Some("{}.done")), now);
    assert_eq!(f.path.as_deref(), Some(marked.as_path()), "{}", f.note);
    assert!(f.note.contains("marker `{}.done` exists"), "{}", f.note);
}

#[test]
fn no_match_and_nothing_complete_are_notes() {
    let d = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    let f = find(&d.path().join("nowhere/*.pt"), &spec(10, None), now);
    assert_eq!(f.path, None);
    assert!(f.note.starts_with("no checkpoint matches"), "{}", f.note);
    file(d.path(), "ckpt/a.pt", now, 0);
    let f = find(&d.path().join("ckpt/*.pt"), &spec(10, None), now);
    assert_eq!(f.path, None);
    assert!(f.note.contains("1 match") && f.note.contains("none is complete"));
}

#[test]
fn hidden_temporary_files_are_never_checkpoints() {
    let d = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    file(d.path(), "ckpt/.step-9.pt.tmp", now, 100);
    let real = file(d.path(), "ckpt/step-1.pt", now, 100);
    let f = find(&d.path().join("ckpt/*"), &spec(10, None), now);
    assert_eq!(f.path, Some(real));
}

#[test]
fn any_depth_finds_nested_checkpoints_and_folders_count_too() {
    let d = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    file(d.path(), "runs/a/step-1.pt", now, 100);
    let deep = file(d.path(), "runs/b/c/step-2.pt", now, 50);
    let f = find(&d.path().join("runs/**/step-*.pt"), &spec(10, None), now);
    assert_eq!(f.path.as_deref(), Some(deep.as_path()), "{}", f.note);
    // A checkpoint folder completed by a marker inside it.
    file(d.path(), "hf/checkpoint-100/DONE", now, 0);
    file(d.path(), "hf/checkpoint-200/model.bin", now, 0);
    let f = find(
        &d.path().join("hf/checkpoint-*"),
        &spec(10, Some("{}/DONE")),
        now,
    );
    assert!(f.path.unwrap().ends_with("checkpoint-100"), "{}", f.note);
}

#[test]
fn an_unreadable_folder_is_a_note_not_a_failure() {
    let d = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    // A "folder" that is a file: reading it fails whoever we are.
    file(d.path(), "ckpt", now, 100);
    let f = find(&d.path().join("ckpt/*.pt"), &spec(10, None), now);
    assert_eq!(f.path, None);
    assert!(f.note.contains("cannot read"), "{}", f.note);
    // Without read permission (root reads it anyway).
    let locked = d.path().join("locked");
    file(d.path(), "locked/a.pt", now, 100);
    let ok = file(d.path(), "open/b.pt", now, 200);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let f = find(&d.path().join("*/*.pt"), &spec(10, None), now);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert_eq!(f.path, Some(ok), "{}", f.note);
        assert!(f.note.contains("cannot read"), "{}", f.note);
    }
}

#[test]
fn a_huge_folder_is_cut_off_with_a_note() {
    let d = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    let dir = d.path().join("many");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..150 {
        std::fs::File::create(dir.join(format!("s{i}"))).unwrap();
    }
    let pattern = dir.join("*").to_string_lossy().into_owned();
    let f = search(&pattern, &spec(0, None), now + Duration::from_secs(1), 100);
    assert!(f.path.is_some());
    assert!(f.note.contains("first 100 folder entries"), "{}", f.note);
}

#[test]
fn an_invalid_glob_is_a_note() {
    let f = newest_complete("/tmp/[x", &spec(10, None), SystemTime::now());
    assert_eq!(f.path, None);
    assert!(f.note.contains("not a valid glob"), "{}", f.note);
}
