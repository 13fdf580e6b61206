//! Wall-clock steps, made with libfaketime (Debian's `faketime`) on the
//! daemon and the supervisors it starts (not on their tasks): the
//! monotonic clock is left alone, as a real step leaves it. A retry's
//! backoff waits as long as it was meant to, a frequent schedule goes on
//! firing, run durations stay true, and a timeout ends its task on time.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::Nj;

const LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// A world whose daemon reads its wall clock's offset from a file.
fn stepped_world(extra: &str) -> (Nj, PathBuf) {
    let mut nj = Nj::new(extra);
    let offset = faked_clock(&mut nj, 0);
    nj.start();
    (nj, offset)
}

/// Gives `nj`'s daemon (at its next start) a wall clock `offset_s` seconds
/// from the real one, read from the file returned: a test writes another
/// offset there (`+N`/`-N` seconds, or `-4h`) to step it.
pub(crate) fn faked_clock(nj: &mut Nj, offset_s: i64) -> PathBuf {
    if !Path::new(LIB).exists() {
        crate::harness::needs("libfaketime", "install Debian's `faketime` (.ci/run does)");
    }
    let offset = nj.path("clock").join("offset");
    std::fs::write(&offset, format!("{offset_s:+}\n")).unwrap();
    nj.env = vec![
        ("LD_PRELOAD".into(), LIB.into()),
        (
            "FAKETIME_TIMESTAMP_FILE".into(),
            offset.display().to_string(),
        ),
        ("FAKETIME_NO_CACHE".into(), "1".into()),
        ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
    ];
    offset
}

#[test]
fn after_a_step_back_a_backoff_waits_what_it_was_meant_to_and_the_step_is_logged() {
    let (nj, offset) = stepped_world("");
    let mark = nj.path("marks").join("first");
    // Exit 103: a network failure, retried after the backoff.
    let script = format!(
        "if [ -e {m} ]; then exit 0; fi; touch {m}; exit 103",
        m = mark.display()
    );
    let id = nj.submit(&[
        "--attempts",
        "2",
        "--backoff",
        "4s",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    nj.until("the first attempt failed", || {
        mark.exists() && nj.show(id)["task"]["state"] == "queued"
    });
    std::fs::write(&offset, "-4h\n").unwrap();
    nj.until("the step is seen", || {
        nj.daemon_log().contains("the wall clock stepped")
    });
    // The reason says the true time left, not what it said when stored.
    let reason = nj.show(id)["task"]["reason"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let ls = nj.json(&["ls"]);
    let listed = ls
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .cloned()
        .unwrap_or_default();
    let listed = listed["reason"].as_str().unwrap_or("");
    assert!(reason.contains("attempt 2 of 2"), "{reason}");
    // Seconds left (or already due), never the four hours the step added.
    if let Some((_, left)) = listed.split_once("next attempt in ") {
        assert!(
            left.ends_with('s') && !left.contains('h') && !left.contains('m'),
            "ls: {listed}"
        );
    }
    let t0 = Instant::now();
    assert_eq!(
        nj.wait_within(id, Duration::from_secs(40)),
        0,
        "{}",
        nj.show(id)
    );
    println!("retried {:?} after the step (backoff 4 s)", t0.elapsed());
    nj.until("the step is logged", || {
        let log = nj.daemon_log();
        log.contains("the wall clock stepped back by 4h") && log.contains("1 backoff(s) moved")
    });
    crate::harness::chaos_row("wall clock -4 h during a backoff", 1, 0, 0, 0);
}

#[test]
fn a_run_across_a_step_records_how_long_it_really_ran() {
    let (nj, offset) = stepped_world("");
    let id = nj.submit(&["--", "sleep", "3"]);
    nj.until("it runs", || nj.running() == 1);
    std::fs::write(&offset, "+2h\n").unwrap();
    assert_eq!(nj.wait(id), 0);
    let run = &nj.show(id)["runs"][0];
    let ran = run["finished_at"].as_i64().unwrap() - run["started_at"].as_i64().unwrap();
    assert!(
        (2_500..20_000).contains(&ran),
        "a 3 s run recorded as {ran} ms across a +2 h step: {run}"
    );
    crate::harness::chaos_row("wall clock +2 h during a run", 1, 0, 0, 0);
}

/// An offset (seconds) within a minute after `near_s` at which the
/// stepped clock reads 57 s past a minute, so a `*/1` schedule is due 3 s
/// on rather than anywhere up to a minute.
fn three_before_a_minute(near_s: i64) -> i64 {
    let real = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    near_s + (57 - (real + near_s)).rem_euclid(60)
}

#[test]
fn a_frequent_schedule_goes_on_firing_after_a_step_back() {
    let (nj, offset) = stepped_world("");
    // Aligned once the daemon is up (its start can take seconds here).
    std::fs::write(&offset, format!("{:+}\n", three_before_a_minute(0))).unwrap();
    nj.ok(&[
        "submit",
        "--name",
        "tick",
        "--schedule",
        "*/1 * * * *",
        "--",
        "true",
    ]);
    let instances = || {
        nj.json(&["ls", "--all"])
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|t| t["name"] == "tick" && t["kind"] != "recurring")
                    .count()
            })
            .unwrap_or(0)
    };
    nj.until_slow("a first firing", || instances() >= 1);
    let before = instances();
    let now = std::fs::read_to_string(&offset).unwrap();
    let now: i64 = now.trim().parse().unwrap();
    // Four hours back, less the seconds that put it 3 s before a minute:
    // the template's stored firing is hours ahead of the stepped clock,
    // and only a daemon that sees the step fires again within minutes.
    let back = three_before_a_minute(now - 4 * 3600);
    std::fs::write(&offset, format!("{back:+}\n")).unwrap();
    nj.until_slow("a firing after the step", || instances() > before);
    crate::harness::chaos_row("wall clock -4 h, */1 schedule", 1, 0, 0, 0);
}

#[test]
fn a_stepped_supervisor_ends_its_task_at_its_timeout_and_the_task_keeps_the_real_clock() {
    let (nj, offset) = stepped_world("");
    let t0 = Instant::now();
    let id = nj.submit(&[
        "--timeout",
        "3s",
        "--",
        "sh",
        "-c",
        "env; date +%s; sleep 60",
    ]);
    // The run is listed as running a moment before its supervisor's pid
    // is stored: wait for the pid itself.
    nj.until("its supervisor is recorded", || {
        nj.show(id)["runs"][0]["supervisor_pid"].as_i64().is_some()
    });
    let pid = nj.show(id)["runs"][0]["supervisor_pid"]
        .as_i64()
        .expect("a supervisor pid, waited for above");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        environ.contains("FAKETIME_TIMESTAMP_FILE=") && environ.contains("libfaketime"),
        "the supervisor runs on the daemon's fake clock: {environ}"
    );
    assert!(!environ.contains("SECRET_TOKEN"), "{environ}");
    std::fs::write(&offset, "-4h\n").unwrap();
    nj.wait(id);
    let took = t0.elapsed();
    let run = &nj.show(id)["runs"][0];
    assert_eq!(run["class"], "timeout", "{run}");
    assert!(
        took < Duration::from_secs(20),
        "a 3 s timeout across a -4 h step took {took:?}"
    );
    let log = nj.ok(&["logs", &id.to_string()]);
    assert!(
        !log.contains("FAKETIME") && !log.contains("LD_PRELOAD"),
        "the task does not inherit the fake clock: {log}"
    );
    let real = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let printed: i64 = log
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .next()
        .unwrap_or(0);
    assert!(
        (real - printed).abs() < 120,
        "the task's `date` read the real clock: {printed} vs {real}"
    );
    crate::harness::chaos_row(
        "wall clock -4 h with the supervisor stepped too",
        1,
        0,
        0,
        0,
    );
}
