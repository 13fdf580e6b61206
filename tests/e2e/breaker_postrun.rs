//! What a hostile reviewer broke in failure classes, retries, validators and
//! checkpoints (see each test).

use crate::harness::Nj;
use std::time::Duration;

/// A task that only *says* its disk is full (the disk has room) was held,
/// released by the disk watch 10 s later, ran again and was held again,
/// forever, never using an attempt: a GPU slot burnt all night. A disk-full
/// run now holds its task at most `MAX_DISK_HOLDS` times in a row; then
/// it is a failure like any other class.
#[test]
fn a_task_that_keeps_claiming_a_full_disk_is_not_rerun_forever() {
    // Each hold is released at the disk watch's next look (every 10 s):
    // 1 byte of room is always there, whatever the CI machine's disk holds.
    let mut nj = Nj::new("[classes]\ndisk_free = \"1B\"");
    nj.start();
    let count = nj.path("markers").join("runs");
    let script = format!(
        "echo run >> {}; echo 'write: No space left on device' >&2; exit 1",
        count.display()
    );
    let id = nj.submit(&["--", "sh", "-c", &script]);
    // Two holds of up to 10 s each, on a loaded 2-core machine.
    assert_eq!(nj.wait_within(id, Duration::from_secs(180)), 1, "it ends");
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

/// A task held for disk room whose output folder was then deleted (the
/// obvious way to make room) stayed held for ever: the disk watch asked
/// `statvfs` of a path that no longer existed and took no answer as no
/// room. It now asks the nearest folder that exists.
#[test]
fn a_held_task_whose_output_folder_was_deleted_is_released() {
    let mut nj = Nj::new("[classes]\ndisk_free = \"1B\"");
    nj.start();
    let marker = nj.path("markers").join("once");
    let out = nj.path("work").join("out");
    let script = format!(
        "if [ -e {m} ]; then exit 0; fi; touch {m}; rm -rf {o}; exit 102",
        m = marker.display(),
        o = out.display()
    );
    let id = nj.submit(&[
        "--output",
        &out.join("deep").display().to_string(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(
        nj.wait(id),
        0,
        "released and run again\n{}",
        nj.daemon_log()
    );
    let show = nj.show(id);
    let classes: Vec<&str> = show["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["class"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(classes, vec!["disk-full", "ok"], "{show}");
}
