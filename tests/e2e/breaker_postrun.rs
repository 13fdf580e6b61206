//! What a hostile reviewer broke in failure classes, retries, validators and
//! checkpoints (see each test).

use crate::harness::Nj;

/// A task that only *says* its disk is full (the disk has room) was held,
/// released by the disk watch 10 s later, ran again and was held again,
/// forever, never using an attempt: a GPU slot burnt all night. A disk-full
/// run now holds its task at most `MAX_DISK_HOLDS` times in a row; then
/// it is a failure like any other class.
#[test]
fn a_task_that_keeps_claiming_a_full_disk_is_not_rerun_forever() {
    // The default room, 1 GiB, is free here: each hold is released at once.
    let mut nj = Nj::new("");
    nj.start();
    let count = nj.path("markers").join("runs");
    let script = format!(
        "echo run >> {}; echo 'write: No space left on device' >&2; exit 1",
        count.display()
    );
    let id = nj.submit(&["--", "sh", "-c", &script]);
    assert_eq!(nj.wait(id), 1, "it ends");
    let show = nj.show(id);
    assert_eq!(show["task"]["state"], "failed", "{show}");
    let runs = show["runs"].as_array().unwrap();
    assert_eq!(
        runs.len(),
        3,
        "three disk-full runs in a row, then it fails"
    );
    assert!(runs.iter().all(|r| r["class"] == "disk-full"), "{show}");
    let reason = show["task"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("disk-full 3 times in a row") && reason.contains("nightjar retry"),
        "{reason}"
    );
}
