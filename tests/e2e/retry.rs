//! Retry by failure class, from real processes: transient classes are tried
//! again with backoff, deterministic ones are not unless listed, a disk-full
//! run holds its task until the disk has room, and every attempt is a run
//! of its own with its class.

use crate::harness::Nj;

/// A script that fails with `first` (printed to stderr, exit `code`) on its
/// first attempt and succeeds on the next, counting attempts in `marker`.
fn flaky(marker: &std::path::Path, first: &str, code: i32) -> String {
    format!(
        "if [ -e {m} ]; then echo again >> {m}; exit 0; fi; touch {m}; echo '{first}' >&2; exit {code}",
        m = marker.display()
    )
}

fn classes(nj: &Nj, id: i64) -> Vec<String> {
    nj.show(id)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["class"].as_str().unwrap_or("running").to_string())
        .collect()
}

#[test]
fn a_network_failure_is_retried_and_each_attempt_is_its_own_run() {
    let mut nj = Nj::new("");
    nj.start();
    let marker = nj.path("markers").join("net-marker");
    let script = flaky(
        &marker,
        "curl: (7) Failed to connect: Connection refused",
        1,
    );
    let id = nj.submit(&[
        "--attempts",
        "3",
        "--backoff",
        "200ms",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(nj.wait(id), 0);
    assert_eq!(classes(&nj, id), vec!["network", "ok"]);
    let show = nj.show(id);
    assert_eq!(show["task"]["state"], "succeeded");
    assert_eq!(show["runs"][1]["attempt"], 2);
}

#[test]
fn an_app_error_is_not_retried_unless_listed() {
    let mut nj = Nj::new("");
    nj.start();
    let plain = nj.submit(&[
        "--attempts",
        "3",
        "--backoff",
        "200ms",
        "--",
        "sh",
        "-c",
        "echo 'KeyError: lr' >&2; exit 3",
    ]);
    assert_eq!(nj.wait(plain), 3);
    assert_eq!(classes(&nj, plain), vec!["app-error"], "one attempt only");
    let reason = nj.show(plain)["task"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.contains("`app-error` is not in retry.on"),
        "the reason says why it was not retried: {reason}"
    );
    let marker = nj.path("markers").join("app-marker");
    let listed = nj.submit(&[
        "--attempts",
        "2",
        "--backoff",
        "200ms",
        "--retry-on",
        "app-error,network",
        "--",
        "sh",
        "-c",
        &flaky(&marker, "KeyError: lr", 3),
    ]);
    assert_eq!(nj.wait(listed), 0);
    assert_eq!(classes(&nj, listed), vec!["app-error", "ok"]);
}

#[test]
fn a_disk_full_run_is_held_without_an_attempt_and_released_when_there_is_room() {
    // Any free byte is room enough: the daemon's disk watch releases it.
    let mut nj = Nj::new("[classes]\ndisk_free = \"1B\"");
    nj.start();
    let marker = nj.path("markers").join("disk-marker");
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        &flaky(&marker, "OSError: [Errno 28] No space left on device", 1),
    ]);
    nj.until("the task is held after disk-full", || {
        nj.show(id)["events"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["kind"] == "held"))
    });
    // One attempt in all, yet it runs again: the disk-full attempt was given back.
    assert_eq!(nj.wait(id), 0);
    assert_eq!(classes(&nj, id), vec!["disk-full", "ok"]);
    let events = nj.show(id)["events"].clone();
    let released = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "released")
        .expect("a released event");
    assert!(
        released["message"]
            .as_str()
            .unwrap_or_default()
            .contains("disk room again"),
        "{released}"
    );
}

#[test]
fn a_task_held_for_disk_room_waits_and_release_lets_it_run() {
    let mut nj = Nj::new("[classes]\ndisk_free = \"1EiB\"");
    nj.start();
    let marker = nj.path("markers").join("held-marker");
    let id = nj.submit(&["--", "sh", "-c", &flaky(&marker, "write failed: ENOSPC", 1)]);
    nj.until("the task is held", || {
        nj.show(id)["task"]["state"].as_str() == Some("held")
    });
    let why = nj.ok(&["why", &id.to_string()]);
    assert!(
        why.contains("disk-full") && why.contains("1.0E free") && why.contains("nightjar release"),
        "why names the class, the room it waits for and the way out: {why}"
    );
    nj.ok(&["release", &id.to_string()]);
    assert_eq!(nj.wait(id), 0);
    assert_eq!(classes(&nj, id), vec!["disk-full", "ok"]);
}
