//! Faults: another process holds the database's write lock while runs end.
//! The daemon keeps answering, freezes for good nowhere, and records every
//! run's end exactly once after the lock goes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{BIN, Nj};

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
    let mut nj = Nj::new("slots = 20\n");
    nj.start();
    let ids: Vec<i64> = (0..20)
        .map(|_| nj.submit(&["--", "sh", "-c", "sleep 1"]))
        .collect();
    nj.until("all 20 running", || nj.running() == 20);
    // Held past the store's busy timeout (5 s) while every run ends.
    let mut holder = hold_write_lock(&nj.state.join("nightjar.db"), 8.0);
    let t0 = Instant::now();
    let mut answered = 0;
    while t0.elapsed() < Duration::from_secs(7) {
        let out = cli_within(&nj, &["ls"], Duration::from_secs(30))
            .unwrap_or_else(|| panic!("`ls` hung while the lock was held\n{}", nj.daemon_log()));
        answered += 1;
        let _ = out;
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(holder.wait().unwrap().success());
    assert!(answered > 0);
    // After the lock goes: every end recorded, each once.
    for &id in &ids {
        let status = cli_within(&nj, &["wait", &id.to_string()], Duration::from_secs(60))
            .unwrap_or_else(|| panic!("task {id}'s end never came\n{}", nj.daemon_log()));
        assert!(status.status.success(), "task {id}: {status:?}");
        let runs = nj.show(id)["runs"].as_array().map(Vec::len);
        assert_eq!(runs, Some(1), "task {id} ran once");
    }
    // And the daemon still takes work.
    let late = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(late), 0);
}
