//! Damage to the store: a WAL truncated after kill -9 and after SIGTERM, a
//! garbage main file, a row that is not text, the database deleted while
//! the daemon runs, a stale `daemon.lock`. Each is noticed (the start stops
//! with what is wrong and how to recover), `nightjar daemon check` says so,
//! `nightjar daemon recover` puts back what the run folders prove, and after
//! it nothing is lost that a folder proves, nothing runs twice and no id is
//! handed out again.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::Nj;

fn ran_counts(file: &Path) -> HashMap<i64, usize> {
    let mut count = HashMap::new();
    for l in std::fs::read_to_string(file).unwrap_or_default().lines() {
        *count.entry(l.trim().parse().unwrap()).or_default() += 1;
    }
    count
}

fn checkpoint(nj: &Nj) {
    let db = rusqlite::Connection::open(nj.state.join("nightjar.db")).unwrap();
    db.busy_timeout(Duration::from_secs(10)).unwrap();
    db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

fn truncate_wal(nj: &Nj) {
    let wal = nj.state.join("nightjar.db-wal");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(0)
        .unwrap();
}

/// Runs `nightjar daemon ARGS` offline; (exit code, stdout + stderr).
pub(crate) fn daemon_verb(nj: &Nj, args: &[&str]) -> (i32, String) {
    let mut a = vec!["daemon"];
    a.extend_from_slice(args);
    let out = nj.cli(&a);
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Three tasks that end and one that runs on after the database forgets
/// them; returns (ended ids, running id, the marks file).
fn forgotten_work(nj: &mut Nj) -> (Vec<i64>, i64, std::path::PathBuf) {
    let ran = nj.path("marks").join("ran.log");
    let line = format!("echo $NIGHTJAR_TASK_ID >> {}", ran.display());
    // Older work, safe in the main file.
    let old = nj.submit(&["--", "sh", "-c", &line]);
    assert_eq!(nj.wait(old), 0);
    checkpoint(nj);
    // Work only the WAL knows.
    let ended: Vec<i64> = (0..3)
        .map(|_| nj.submit(&["--", "sh", "-c", &line]))
        .collect();
    for &id in &ended {
        assert_eq!(nj.wait(id), 0);
    }
    let go = nj.path("marks").join("go");
    let started = nj.path("marks").join("long-started");
    let long = nj.submit(&[
        "--",
        "sh",
        "-c",
        &format!(
            "touch {}; while [ ! -e {} ]; do sleep 0.1; done; {line}",
            started.display(),
            go.display()
        ),
    ]);
    // Its command runs (a claim alone, killed before its supervisor read
    // the spec, is an accepted task the truncated WAL loses: reported lost).
    nj.until("the long task runs", || started.exists());
    (ended, long, ran)
}

fn after_recovery(nj: &mut Nj, ended: &[i64], long: i64, ran: &Path) {
    let (code, out) = daemon_verb(nj, &["check"]);
    assert_eq!(code, 1, "check finds the damage: {out}");
    assert!(out.contains("not consistent"), "{out}");
    let (code, out) = daemon_verb(nj, &["recover"]);
    assert_eq!(code, 0, "recover: {out}");
    assert!(out.contains("put back from their folders"), "{out}");
    let (code, out) = daemon_verb(nj, &["check"]);
    assert_eq!(code, 0, "sound after recovery: {out}");
    nj.start();
    for &id in ended {
        assert_eq!(nj.wait(id), 0, "task {id} ended ok: {}", nj.show(id));
    }
    std::fs::write(nj.path("marks").join("go"), "").unwrap();
    assert_eq!(nj.wait(long), 0, "the long task: {}", nj.show(long));
    // Nothing ran twice; new ids go past every id handed out.
    let fresh = nj.submit(&[
        "--",
        "sh",
        "-c",
        &format!("echo $NIGHTJAR_TASK_ID >> {}", ran.display()),
    ]);
    assert!(fresh > long, "task id {fresh} is new (> {long})");
    assert_eq!(nj.wait(fresh), 0);
    let counts = ran_counts(ran);
    for id in ended.iter().chain([&long, &fresh]) {
        assert_eq!(counts.get(id), Some(&1), "task {id} ran once: {counts:?}");
    }
    let runs: Vec<i64> = [long, fresh]
        .iter()
        .map(|&id| nj.show(id)["runs"][0]["id"].as_i64().unwrap())
        .collect();
    assert!(runs[1] > runs[0], "run ids are not reused: {runs:?}");
}

#[test]
fn a_wal_truncated_after_kill_9_stops_the_start_and_recover_puts_back_what_the_folders_prove() {
    let mut nj = Nj::new("slots = 2");
    nj.start();
    let (ended, long, ran) = forgotten_work(&mut nj);
    nj.kill9();
    truncate_wal(&nj);
    let (code, log) = nj.start_refused();
    assert_ne!(code, 0);
    assert!(
        log.contains("not consistent") && log.contains("nightjar daemon recover"),
        "the refusal says what and how: {log}"
    );
    after_recovery(&mut nj, &ended, long, &ran);
    crate::harness::chaos_row(
        "WAL truncated after kill -9, recovered",
        ended.len() + 2,
        0,
        0,
        0,
    );
}

#[test]
fn a_wal_truncated_after_sigterm_is_noticed_too() {
    let mut nj = Nj::new("slots = 2");
    nj.start();
    let (ended, long, ran) = forgotten_work(&mut nj);
    assert!(nj.term().success());
    truncate_wal(&nj);
    let (code, log) = nj.start_refused();
    assert_ne!(code, 0);
    assert!(
        log.contains("lost its latest writes") || log.contains("newer than anything"),
        "{log}"
    );
    after_recovery(&mut nj, &ended, long, &ran);
    crate::harness::chaos_row(
        "WAL truncated after SIGTERM, recovered",
        ended.len() + 2,
        0,
        0,
        0,
    );
}

#[test]
fn a_garbage_database_file_is_named_damaged_and_recover_rebuilds_from_the_run_folders() {
    let mut nj = Nj::new("");
    nj.start();
    let ids: Vec<i64> = (0..3).map(|_| nj.submit(&["--", "true"])).collect();
    let failed = nj.submit(&["--", "sh", "-c", "exit 3"]);
    for &id in &ids {
        assert_eq!(nj.wait(id), 0);
    }
    assert_ne!(nj.wait(failed), 0);
    assert!(nj.term().success());
    let db = nj.state.join("nightjar.db");
    std::fs::write(&db, vec![0x5a; 64 * 1024]).unwrap();
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(nj.state.join(format!("nightjar.db{ext}")));
    }
    let (code, log) = nj.start_refused();
    assert_ne!(code, 0);
    assert!(
        log.contains("is damaged") && log.contains("recover"),
        "{log}"
    );
    let (code, out) = daemon_verb(&nj, &["check", "--full"]);
    assert_eq!(code, 1, "{out}");
    let (code, out) = daemon_verb(&nj, &["recover"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("moved it to"), "{out}");
    assert!(
        out.contains("4 run(s) put back") && out.contains("4 task(s) recreated"),
        "{out}"
    );
    nj.start();
    for &id in &ids {
        assert_eq!(nj.wait(id), 0, "{}", nj.show(id));
    }
    assert_eq!(
        nj.show(failed)["task"]["state"],
        "failed",
        "{}",
        nj.show(failed)
    );
    let aside: Vec<_> = std::fs::read_dir(&nj.state)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".damaged-"))
        .collect();
    assert_eq!(
        aside.len(),
        1,
        "the damaged file is kept aside, not deleted"
    );
    crate::harness::chaos_row("garbage database file, rebuilt", ids.len() + 1, 0, 0, 0);
}

#[test]
fn a_row_that_is_not_text_stops_the_start_naming_its_table_and_row() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0);
    assert!(nj.term().success());
    {
        let db = rusqlite::Connection::open(nj.state.join("nightjar.db")).unwrap();
        db.execute(
            "UPDATE tasks SET name = CAST(x'ff00fe' AS TEXT) WHERE id = ?1",
            [id],
        )
        .unwrap();
    }
    let (code, log) = nj.start_refused();
    assert_ne!(code, 0);
    assert!(
        log.contains(&format!(
            "table tasks, row id {id}: column name is not UTF-8"
        )),
        "{log}"
    );
}

#[test]
fn the_database_deleted_while_running_halts_the_daemon_and_the_next_start_refuses() {
    let mut nj = Nj::new("[http]\nlisten = \"127.0.0.1:0\"\n");
    nj.start();
    let token = nj.json(&["token", "create", "--name", "t"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0);
    std::fs::remove_file(nj.state.join("nightjar.db")).unwrap();
    let t0 = Instant::now();
    let said = loop {
        let out = nj.cli(&["ls"]);
        if !out.status.success() {
            break String::from_utf8_lossy(&out.stderr).into_owned();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "not noticed in 10 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    println!("noticed after {:?}", t0.elapsed());
    assert!(
        said.contains("halted") && said.contains("deleted"),
        "{said}"
    );
    let out = nj.cli(&["submit", "--", "true"]);
    assert!(!out.status.success(), "a halted daemon takes no submit");
    // Its streams too: the event stream is refused, as every verb is.
    let a = crate::http_client::addr(&nj);
    let events = crate::http_client::call(a, "GET", "/api/v2/events", Some(&token), "");
    assert_eq!(events.status, 503, "{}", events.text());
    assert!(events.text().contains("halted"), "{}", events.text());
    nj.kill9();
    let (code, log) = nj.start_refused();
    assert_ne!(code, 0);
    assert!(
        log.contains("not consistent"),
        "a new empty database is not taken: {log}"
    );
    crate::harness::chaos_row("database deleted while running", 1, 0, 0, 0);
}

#[test]
fn a_stale_daemon_lock_with_a_dead_or_reused_pid_does_not_stop_a_start() {
    let mut nj = Nj::new("");
    std::fs::create_dir_all(&nj.state).unwrap();
    let lock = nj.state.join("daemon.lock");
    // A pid no process has (above the kernel's limit), then a live one's (ours).
    for pid in ["4194305", &std::process::id().to_string()] {
        std::fs::write(&lock, pid).unwrap();
        nj.start();
        assert!(nj.term().success());
    }
    // Held by a process that is no daemon: the refusal names that process.
    // It says when it holds the lock (its command runs only then): a fixed
    // 300 ms was not always enough for `flock` to get there on a loaded
    // machine, and the daemon took the lock and started.
    let held = nj.path("marks").join("held");
    let mut holder = std::process::Command::new("flock")
        .arg(&lock)
        .args(["sh", "-c", ": > \"$0\"; exec sleep 30"])
        .arg(&held)
        .spawn()
        .unwrap();
    nj.until("the other process holds the lock", || held.exists());
    std::fs::write(&lock, "4194305").unwrap();
    let (code, log) = nj.start_refused();
    let _ = holder.kill();
    let _ = holder.wait();
    assert_ne!(code, 0);
    assert!(
        log.contains("not a nightjar daemon") && log.contains("4194305"),
        "{log}"
    );
}
