//! Bad input gets a clear error and changes nothing.

use crate::harness::{BIN, Nj};

#[test]
fn malformed_task_file_names_file_line_and_key_and_queues_nothing() {
    let mut nj = Nj::new("");
    nj.start();
    let work = nj.path("work");
    std::fs::write(
        work.join("bad.toml"),
        "name = \"x\"\ncommand = \"true\"\n[resources]\ngpu = 1\n",
    )
    .unwrap();
    let out = nj.cli(&["submit", "bad.toml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("line 4") && err.contains("gpu"),
        "{err}"
    );
    std::fs::write(work.join("bad.yaml"), "command: echo hi\npriority: 7\n").unwrap();
    let err = String::from_utf8_lossy(&nj.cli(&["submit", "bad.yaml"]).stderr).into_owned();
    assert!(err.contains("bad.yaml") && err.contains("line 2"), "{err}");
    std::fs::write(work.join("vars.toml"), "command = \"echo ${NOPE}\"\n").unwrap();
    let err = String::from_utf8_lossy(&nj.cli(&["submit", "vars.toml"]).stderr).into_owned();
    assert!(err.contains("NOPE"), "{err}");
    let err = String::from_utf8_lossy(
        &nj.cli(&["submit", "--workdir", "/no/such/dir", "--", "true"])
            .stderr,
    )
    .into_owned();
    assert!(err.contains("/no/such/dir"), "{err}");
    let err = String::from_utf8_lossy(&nj.cli(&["submit", "--after", "999", "--", "true"]).stderr)
        .into_owned();
    assert!(err.contains("999"), "{err}");
    assert_eq!(
        nj.json(&["ls", "--all"]).as_array().unwrap().len(),
        0,
        "nothing was queued"
    );
}

#[test]
fn a_second_daemon_on_the_same_state_dir_refuses_to_start() {
    let mut nj = Nj::new("");
    nj.start();
    let out = std::process::Command::new(BIN)
        .args(["--config", nj.config.to_str().unwrap(), "daemon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already using state dir"));
    assert!(
        nj.cli(&["ls"]).status.success(),
        "the first daemon is unharmed"
    );
}

#[test]
fn unwritable_state_dir_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = std::process::Command::new(BIN)
        .args([
            "--state-dir",
            file.join("state").to_str().unwrap(),
            "daemon",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot create state dir") && err.contains("--state-dir"),
        "{err}"
    );
}

#[test]
fn a_database_from_a_newer_version_is_refused_untouched() {
    let nj = Nj::new("");
    std::fs::create_dir_all(&nj.state).unwrap();
    let db = nj.state.join("nightjar.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA user_version = 42;")
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["--config", nj.config.to_str().unwrap(), "daemon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("schema version 42"));
    assert_eq!(std::fs::read(&db).unwrap(), before, "database unchanged");
}

#[test]
fn bad_config_key_names_the_file_and_line() {
    let nj = Nj::new("slotz = 3");
    let out = nj.cli(&["daemon"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nightjar.toml") && err.contains("slotz") && err.contains("line 2"),
        "{err}"
    );
}
