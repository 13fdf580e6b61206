//! The daemon's own events through the webhook (the receiver of
//! tests/e2e/notify.rs): a file system under `[notify] disk_low` is told of
//! once, and `daemon-stopped` reaches the receiver before the daemon has
//! exited, while a receiver that is down or hangs holds the stop no longer
//! than `stop_flush` and gets the event after the next start.

use std::time::{Duration, Instant};

use crate::notify::{Receiver, delivered, world_with};

/// Kinds of what was delivered, in order.
fn kinds(r: &Receiver) -> Vec<String> {
    delivered(r).into_iter().map(|(_, kind)| kind).collect()
}

#[test]
fn a_file_system_under_disk_low_is_told_of_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    // Every file system has less than an exbibyte free.
    let mut nj = world_with(r.port, "\"disk-low\"", "disk_low = \"1EiB\"\n");
    nj.start();
    // A running task whose output folder is on the same file system as the
    // state dir: another watched path, the same file system, no second event.
    let out = nj.path("out");
    let id = nj.submit(&["--output", out.to_str().unwrap(), "--", "sleep", "120"]);
    nj.until_slow("the disk-low event", || !delivered(&r).is_empty());
    let got = r.got();
    let e = got
        .iter()
        .find(|g| g["kind"] == "disk-low")
        .expect("disk-low");
    let title = e["title"].as_str().unwrap_or_default();
    let text = e["text"].as_str().unwrap_or_default();
    assert!(
        title.contains("low disk space on /") && title.contains("free of"),
        "{title}"
    );
    assert!(
        text.contains("Watched path: ")
            && text.contains("What to do: free room")
            && text.contains("held as disk-full"),
        "{text}"
    );
    nj.until("the task runs", || nj.running() == 1);
    // The disk watch looks every 10 s: after another look (with the task's
    // output folder among the paths), still the one event.
    std::thread::sleep(Duration::from_secs(15));
    assert_eq!(kinds(&r), ["disk-low"], "told once: {:?}", r.got());
    nj.ok(&["cancel", &id.to_string()]);
}

#[test]
fn daemon_stopped_reaches_the_receiver_before_the_daemon_has_exited() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    let mut nj = world_with(
        r.port,
        "\"daemon-started\", \"daemon-stopped\"",
        "stop_flush = \"60s\"\n",
    );
    nj.start();
    // Delivered: the notifier is compiled and ready.
    nj.until_slow("daemon-started", || kinds(&r) == ["daemon-started"]);
    let status = nj.term();
    assert!(status.success(), "{status:?}");
    assert_eq!(
        kinds(&r),
        ["daemon-started", "daemon-stopped"],
        "told by the time it exited\n{}",
        nj.daemon_log()
    );
}

#[test]
fn a_receiver_not_listening_does_not_hold_the_stop_and_gets_the_event_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    // Nobody listens there yet: the port is taken, then freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The default retry schedule: 5 s before the first retry.
    let mut nj = world_with(
        port,
        "\"daemon-started\", \"daemon-stopped\"",
        "stop_flush = \"2s\"\n",
    );
    nj.start();
    nj.until_slow("a delivery tried and failed", || {
        nj.json(&["notify", "ls"])["notifiers"][0]["state"] == "retrying"
    });
    let t0 = Instant::now();
    let status = nj.term();
    assert!(status.success(), "{status:?}");
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "stopped after {:?}\n{}",
        t0.elapsed(),
        nj.daemon_log()
    );
    let r = Receiver::start(dir.path().join("got.jsonl"), Some(port));
    nj.start();
    nj.until_slow("the stop told after the restart", || {
        kinds(&r).contains(&"daemon-stopped".to_string())
    });
    assert_eq!(
        kinds(&r)[..2],
        ["daemon-started", "daemon-stopped"],
        "in order"
    );
}

#[test]
fn a_receiver_that_hangs_holds_the_stop_no_longer_than_stop_flush() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    // Without the stop's deadline, the held delivery would keep the daemon
    // for the 300 s of `timeout`.
    let mut nj = world_with(
        r.port,
        "\"daemon-started\", \"daemon-stopped\"",
        "stop_flush = \"2s\"\nhttp_timeout = \"300s\"\ntimeout = \"300s\"\n",
    );
    nj.start();
    nj.until_slow("daemon-started", || kinds(&r) == ["daemon-started"]);
    r.hold(true);
    let t0 = Instant::now();
    let status = nj.term();
    assert!(status.success(), "{status:?}");
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "stopped after {:?}\n{}",
        t0.elapsed(),
        nj.daemon_log()
    );
    r.hold(false);
    nj.start();
    nj.until_slow("the stop told after the restart", || {
        kinds(&r).iter().filter(|k| *k == "daemon-stopped").count() >= 1
            && kinds(&r).last().is_some_and(|k| k == "daemon-started")
    });
    // A send cut short by the stop is repeated with its key, never as a new event.
    let keys: Vec<String> = delivered(&r)
        .into_iter()
        .filter(|(_, kind)| kind == "daemon-stopped")
        .map(|(key, _)| key)
        .collect();
    assert!(keys.windows(2).all(|w| w[0] == w[1]), "{keys:?}");
}
