//! Faults: another process holds the database's write lock while runs end.
//! The daemon keeps answering, freezes for good nowhere, and records every
//! run's end exactly once after the lock goes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{BIN, Nj, chaos_row, chaos_scale};

/// `nightjar ARGS` against `nj`, or `None` if it has not answered within `limit`.
fn cli_within(nj: &Nj, args: &[&str], limit: Duration) -> Option<Output> {
    let mut child = Command::new(BIN)
        .arg("--config")
        .arg(&nj.config)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Holds a write transaction on `db` from another process for `secs`
/// (Python's sqlite3: a client the daemon does not know); returns once held.
fn hold_write_lock(db: &std::path::Path, secs: f64) -> std::process::Child {
    let mut c = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\nc.execute('BEGIN IMMEDIATE')\nprint('held', flush=True)\ntime.sleep(float(sys.argv[2]))\nc.execute('COMMIT')\n",
        ])
        .arg(db)
        .arg(secs.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(c.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "held");
    c
}

#[test]
fn a_write_lock_held_elsewhere_while_runs_end_freezes_nothing_and_loses_no_end() {
    // The suite: 20 runs under an 8 s hold, once; `scripts/chaos`: 50 runs
    // under a 20 s hold, 10 times.
    let runs = chaos_scale(20, 50);
    let hold = chaos_scale(8, 20) as f64;
    let trials = chaos_scale(1, 10);
    let mut nj = Nj::new(&format!("slots = {runs}\n"));
    nj.start();
    let (mut doubled, mut hung, mut lost) = (0, 0, 0);
    let mut latencies: Vec<Duration> = Vec::new();
    for trial in 0..trials {
        // Each run waits for the gate, so all are running at once however
        // slowly a loaded machine starts them (a `sleep 1` could end before
        // the last began), and all end while the lock is held.
        let gate = nj.path("gates").join(trial.to_string());
        let wait = format!("while [ ! -e {} ]; do sleep 0.05; done", gate.display());
        let ids: Vec<i64> = (0..runs)
            .map(|_| nj.submit(&["--", "sh", "-c", &wait]))
            .collect();
        nj.until("all running", || nj.running() == runs);
        // Held past the store's busy timeout (5 s) while every run ends.
        let mut holder = hold_write_lock(&nj.state.join("nightjar.db"), hold);
        std::fs::write(&gate, "").unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs_f64(hold - 1.0) {
            let t = Instant::now();
            cli_within(&nj, &["ls"], Duration::from_secs(30)).unwrap_or_else(|| {
                panic!("`ls` hung while the lock was held\n{}", nj.daemon_log())
            });
            latencies.push(t.elapsed());
            std::thread::sleep(Duration::from_millis(200));
        }
        assert!(holder.wait().unwrap().success());
        // After the lock goes: every end recorded, each once.
        for &id in &ids {
            match cli_within(&nj, &["wait", &id.to_string()], Duration::from_secs(60)) {
                None => hung += 1,
                Some(s) if !s.status.success() => lost += 1,
                Some(_) => {}
            }
            if nj.show(id)["runs"].as_array().map(Vec::len) != Some(1) {
                doubled += 1;
            }
        }
    }
    latencies.sort();
    let p99 = latencies[(latencies.len() * 99 / 100).min(latencies.len() - 1)];
    println!(
        "`ls` while the write lock was held: {} answers, p50 {:?}, p99 {p99:?}",
        latencies.len(),
        latencies[latencies.len() / 2]
    );
    chaos_row(
        &format!("write lock held {hold} s elsewhere ({trials}x)"),
        runs * trials,
        lost,
        doubled,
        hung,
    );
    assert_eq!((lost, doubled, hung), (0, 0, 0), "lost, doubled, hung");
    // And the daemon still takes work.
    let late = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(late), 0);
}

/// A change the database cannot take (another process holds its write lock
/// past the busy timeout) is the daemon's failure, not the caller's: exit 7
/// on the CLI and 500 over HTTP (a bad request is 1 and 400), a message
/// saying so, and nothing changed; the same change goes through once the
/// lock is gone.
#[test]
fn a_change_the_locked_database_refuses_is_the_daemons_failure_and_changes_nothing() {
    use crate::http_client::{addr, call};
    let mut nj = Nj::new("[http]\nlisten = \"127.0.0.1:0\"\n");
    nj.start();
    let made = nj.json(&["token", "create", "--name", "tests"]);
    let token = made["token"].as_str().unwrap().to_string();
    let id = nj.submit(&["--hold", "--", "true"]);
    // A token never used yet: its first use writes when it was used.
    let fresh = nj.json(&["token", "create", "--name", "fresh"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    // The same request as the caller's own mistake, for contrast.
    let bad = call(
        addr(&nj),
        "POST",
        "/api/v2/release",
        Some(&token),
        "{\"id\": \"x\"}",
    );
    assert_eq!(bad.status, 400, "{}", bad.text());

    // Each change (and the fresh token's first use) waits out the store's
    // 5 s busy timeout: three fit in 25 s.
    let mut holder = hold_write_lock(&nj.state.join("nightjar.db"), 25.0);
    let out = cli_within(&nj, &["release", &id.to_string()], Duration::from_secs(30))
        .unwrap_or_else(|| panic!("`release` hung\n{}", nj.daemon_log()));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err.contains("locked") && err.contains("not in the request"),
        "{err}"
    );
    let r = call(
        addr(&nj),
        "POST",
        "/api/v2/cancel",
        Some(&token),
        &format!("{{\"id\": {id}}}"),
    );
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(r.json()["kind"], "internal", "{}", r.text());
    // A valid token is taken though its last use cannot be written now
    // (it was refused as `forbidden`, 401), and what only reads answers.
    let q = call(addr(&nj), "POST", "/api/v2/queue", Some(&fresh), "{}");
    assert_eq!(q.status, 200, "{}", q.text());
    assert_eq!(q.json()["ok"]["rows"][0]["id"], id, "{}", q.text());
    assert!(
        holder.try_wait().unwrap().is_none(),
        "every answer came while the lock was held"
    );
    assert!(holder.wait().unwrap().success());

    // Nothing changed: still held, not cancelled; the change goes through now.
    assert_eq!(nj.show(id)["task"]["state"], "held", "{}", nj.show(id));
    nj.ok(&["release", &id.to_string()]);
    assert_eq!(nj.wait(id), 0);
    assert!(
        nj.daemon_log()
            .contains("a request failed inside the daemon"),
        "the daemon's log has the failure"
    );
}
