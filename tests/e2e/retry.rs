//! Retry by failure class, from real processes: transient classes are tried
//! again with backoff, deterministic ones are not unless listed, and every
//! attempt is a run of its own with its class. (A disk-full run's hold and
//! release are the in-process tier's: `host/src/api/inproc/disk_holds.rs`.)

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
