//! Restart without loss: kill -9, SIGTERM, and a host reboot.

use crate::harness::{Nj, read};

#[test]
fn kill9_with_3_running_and_10_queued_loses_nothing_and_runs_nothing_twice() {
    let mut nj = Nj::new("slots = 3");
    nj.start();
    let marks = nj.path("marks");
    let mut ids = Vec::new();
    for i in 0..13 {
        let script = format!(
            "echo run >> {}/t{i}; sleep 1.5; exit {}",
            marks.display(),
            i % 4
        );
        ids.push(nj.submit(&["--name", &format!("t{i}"), "--", "sh", "-c", &script]));
    }
    nj.until("3 running", || nj.running() == 3);
    nj.kill9();
    std::thread::sleep(std::time::Duration::from_millis(300));
    nj.start();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(nj.wait(*id), (i % 4) as i32, "task t{i} exit status");
    }
    for (i, id) in ids.iter().enumerate() {
        let show = nj.show(*id);
        assert_eq!(
            show["runs"].as_array().unwrap().len(),
            1,
            "t{i} has exactly one run"
        );
        assert_eq!(
            read(&marks.join(format!("t{i}"))),
            "run\n",
            "t{i} started exactly once"
        );
        assert_eq!(show["runs"][0]["exit_code"], (i % 4) as i64);
    }
}

#[test]
fn sigterm_stops_the_daemon_and_leaves_running_tasks_running() {
    let mut nj = Nj::new("");
    nj.start();
    // The task runs until the test opens its gate, however slowly a loaded
    // machine stops the daemon (a `sleep 2` ended before the check once).
    let gate = nj.path("marks").join("gate");
    let script = format!(
        "while [ ! -e {} ]; do sleep 0.1; done; exit 5",
        gate.display()
    );
    let id = nj.submit(&["--", "sh", "-c", &script]);
    nj.until("supervisor recorded", || {
        !nj.show(id)["runs"][0]["supervisor_pid"].is_null()
    });
    let status = nj.term();
    assert!(
        status.success(),
        "daemon exits cleanly on SIGTERM: {status:?}"
    );
    let pid = nj.show_offline_supervisor(id);
    assert!(
        crate::harness::alive(pid),
        "the run's supervisor outlives the daemon"
    );
    nj.start();
    std::fs::write(&gate, "").unwrap();
    assert_eq!(nj.wait(id), 5);
}

#[test]
fn host_reboot_marks_runs_lost_and_requeues_per_retry_settings() {
    let mut nj = Nj::new("slots = 2");
    nj.start();
    let marks = nj.path("marks");
    let script = format!(
        "if [ -e {m}/again ]; then exit 0; fi; touch {m}/again; exec sleep 60",
        m = marks.display()
    );
    let retried = nj.submit(&[
        "--attempts",
        "2",
        "--backoff",
        "0s",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let once = nj.submit(&["--", "sleep", "61"]);
    nj.until("2 running", || nj.running() == 2);
    nj.until("the first attempt's marker", || {
        marks.join("again").exists()
    });
    nj.until("both supervisors recorded", || {
        [retried, once]
            .iter()
            .all(|&id| !nj.show(id)["runs"][0]["supervisor_pid"].is_null())
    });
    nj.kill9();
    // A reboot takes every supervisor and task with it: each supervisor
    // leads its own session, which holds its task's whole tree.
    for id in [retried, once] {
        let sid = nj.show_offline_supervisor(id);
        let _ = std::process::Command::new("pkill")
            .args(["-9", "-s", &sid.to_string()])
            .status();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    nj.start();
    assert_eq!(nj.wait(retried), 0, "requeued and succeeded on attempt 2");
    assert_eq!(nj.wait(once), 75, "no retries left: failed as lost");
    let runs = nj.show(retried)["runs"].clone();
    assert_eq!(runs[0]["class"], "lost");
    assert_eq!(runs[1]["class"], "ok");
    assert_eq!(nj.show(once)["runs"][0]["class"], "lost");
}

impl Nj {
    /// The supervisor pid of a task's first run, read from the database file
    /// directly (the daemon is down).
    fn show_offline_supervisor(&self, id: i64) -> i32 {
        let conn = rusqlite::Connection::open(self.state.join("nightjar.db")).unwrap();
        conn.query_row(
            "SELECT supervisor_pid FROM runs WHERE task_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap()
    }
}

#[test]
fn a_daemon_started_on_a_release_0_1_database_upgrades_it_and_shows_the_sweep() {
    let mut nj = Nj::new("");
    std::fs::create_dir_all(&nj.state).unwrap();
    std::fs::set_permissions(
        &nj.state,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/nightjar-0.1-schema3.db");
    std::fs::copy(&fixture, nj.state.join("nightjar.db")).unwrap();
    nj.start();
    let ls = nj.ok(&["ls", "--all"]);
    let sweep = ls
        .lines()
        .find(|l| l.contains(" lr "))
        .expect("the sweep line");
    assert!(
        sweep.contains("sweep[3]") && sweep.contains("3 succeeded"),
        "{ls}"
    );
    assert!(!ls.contains("array"), "{ls}");
    let json = nj.ok(&["--json", "show", "3"]);
    assert!(json.contains("\"kind\": \"sweep\""), "{json}");
    // The template still fires; the held task is still held.
    assert!(
        ls.lines()
            .any(|l| l.contains("nightly") && l.contains("scheduled")),
        "{ls}"
    );
    assert!(
        ls.lines()
            .any(|l| l.contains("held-one") && l.contains("held")),
        "{ls}"
    );
}
