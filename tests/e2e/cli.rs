//! The verbs, end to end.

use crate::harness::Nj;

#[test]
fn every_verb_says_the_daemon_is_not_running_and_how_to_start_it() {
    let nj = Nj::new("");
    for verb in [
        &["ls"][..],
        &["show", "1"],
        &["submit", "--", "true"],
        &["wait", "1"],
        &["cancel", "1"],
        &["logs", "1"],
    ] {
        let out = nj.cli(verb);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{verb:?}: exit 3 is `no daemon`"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not running"), "{verb:?}: {err}");
        assert!(err.contains("nightjar daemon"), "{verb:?}: {err}");
    }
}

#[test]
fn submit_wait_show_logs_and_exit_status_mirror_the_task() {
    let mut nj = Nj::new("slots = 2");
    nj.start();
    let ok = nj.submit(&[
        "--name",
        "hello",
        "--",
        "sh",
        "-c",
        "echo out-line; echo err-line >&2",
    ]);
    let bad = nj.submit(&["--", "sh", "-c", "exit 7"]);
    let missing = nj.submit(&["--", "no-such-program-xyz"]);
    assert_eq!(nj.wait(ok), 0);
    assert_eq!(nj.wait(bad), 7);
    assert_eq!(nj.wait(missing), 127);
    assert_eq!(nj.ok(&["logs", &ok.to_string()]), "out-line\n");
    assert_eq!(nj.ok(&["logs", &ok.to_string(), "--stderr"]), "err-line\n");
    let show = nj.show(missing);
    assert_eq!(show["task"]["state"], "failed");
    assert_eq!(show["runs"][0]["class"], "app-error");
    assert!(
        show["runs"][0]["message"]
            .as_str()
            .unwrap()
            .contains("command not found")
    );
    let human = nj.ok(&["show", &ok.to_string()]);
    assert!(human.contains("waited") && human.contains("ran"), "{human}");
    let ls = nj.ok(&["ls"]);
    assert!(ls.contains("hello") && ls.contains("succeeded"), "{ls}");
}

#[test]
fn logs_follow_streams_a_live_run_to_its_end() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        "for i in 1 2 3; do echo line $i; sleep 0.3; done",
    ]);
    nj.until("start", || {
        nj.show(id)["runs"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    });
    let out = nj.ok(&["logs", "-f", &id.to_string()]);
    assert_eq!(out, "line 1\nline 2\nline 3\n");
}

#[test]
fn hold_release_cancel_and_retry() {
    let mut nj = Nj::new("slots = 1");
    nj.start();
    let held = nj.submit(&["--hold", "--", "true"]);
    assert_eq!(nj.show(held)["task"]["state"], "held");
    nj.ok(&["release", &held.to_string()]);
    assert_eq!(nj.wait(held), 0);
    let long = nj.submit(&["--", "sh", "-c", "trap '' TERM; sleep 60"]);
    let queued = nj.submit(&["--", "true"]);
    nj.until("running", || nj.running() == 1);
    nj.ok(&["cancel", &queued.to_string()]);
    assert_eq!(nj.show(queued)["task"]["state"], "cancelled");
    nj.ok(&["cancel", &long.to_string()]);
    assert_eq!(
        nj.wait(long),
        130,
        "cancelled: TERM ignored, killed after grace"
    );
    nj.ok(&["retry", &queued.to_string()]);
    assert_eq!(nj.wait(queued), 0);
    assert_eq!(nj.show(queued)["runs"].as_array().unwrap().len(), 1);
    let err = nj.cli(&["hold", &queued.to_string()]);
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("only queued tasks"));
}

#[test]
fn failed_dependency_blocks_the_chain_with_a_reason_and_retry_unblocks() {
    let mut nj = Nj::new("");
    nj.start();
    let work = nj.path("work");
    std::fs::write(
        work.join("pipe.toml"),
        "[[task]]\nname = \"fetch\"\ncommand = \"if [ -e again ]; then exit 0; fi; touch again; exit 1\"\n\
         [[task]]\nname = \"clean\"\ncommand = \"true\"\nafter = [\"fetch\"]\n\
         [[task]]\nname = \"report\"\ncommand = \"true\"\nafter = [\"clean\"]\n\
         [[task]]\nname = \"notify\"\ncommand = \"true\"\nafter_any = [\"fetch\"]\n",
    )
    .unwrap();
    let ids: Vec<i64> = nj
        .json(&["submit", "pipe.toml"])
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_i64().unwrap())
        .collect();
    assert_eq!(nj.wait(ids[0]), 1);
    assert_eq!(nj.wait(ids[1]), 69, "blocked");
    assert_eq!(nj.wait(ids[2]), 69, "blocked transitively");
    assert_eq!(nj.wait(ids[3]), 0, "after-any runs anyway");
    let reason = nj.show(ids[1])["task"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains(&format!("dependency {}", ids[0])),
        "{reason}"
    );
    // The retry succeeds (the step fails only once), so the chain runs on.
    nj.ok(&["retry", &ids[0].to_string()]);
    assert_eq!(nj.wait(ids[0]), 0);
    assert_eq!(nj.wait(ids[1]), 0, "unblocked by the retry");
    assert_eq!(nj.wait(ids[2]), 0, "unblocked transitively");
}

#[test]
fn sweep_is_one_line_with_counts_and_members_get_their_parameters() {
    let mut nj = Nj::new("slots = 2");
    nj.start();
    let work = nj.path("work");
    std::fs::write(
        work.join("sweep.yaml"),
        "name: grid\ncommand: echo lr=${lr} seed=${seed}\nsweep:\n  lr: [0.1, 0.01]\n  seed: [1, 2]\n",
    )
    .unwrap();
    let id = nj.json(&["submit", "sweep.yaml"])[0]["id"]
        .as_i64()
        .unwrap();
    assert_eq!(nj.wait(id), 0);
    let ls = nj.ok(&["ls"]);
    let line = ls.lines().find(|l| l.contains("grid")).unwrap();
    assert!(
        line.contains("sweep[4]") && line.contains("4 succeeded"),
        "{ls}"
    );
    assert_eq!(ls.lines().count(), 2, "members fold into one line: {ls}");
    let members = nj.show(id)["members"].as_array().unwrap().clone();
    let mut outs: Vec<String> = members
        .iter()
        .map(|m| nj.ok(&["logs", &m["id"].to_string()]))
        .collect();
    outs.sort();
    assert_eq!(
        outs,
        [
            "lr=0.01 seed=1\n",
            "lr=0.01 seed=2\n",
            "lr=0.1 seed=1\n",
            "lr=0.1 seed=2\n"
        ]
    );
}

#[test]
fn completions_are_printed_for_bash() {
    let nj = Nj::new("");
    let out = nj.ok(&["completions", "bash"]);
    assert!(out.contains("nightjar") && out.contains("submit"));
}

#[test]
fn without_the_slim_supervisor_binary_the_daemon_uses_nightjard_supervise() {
    let mut nj = Nj::new("");
    // `nightjard` alone in a folder: no `nightjar-supervise` beside it.
    let lone = nj.path("bin").join("nightjard");
    if std::fs::hard_link(crate::harness::DAEMON_BIN, &lone).is_err() {
        std::fs::copy(crate::harness::DAEMON_BIN, &lone).unwrap();
    }
    nj.start_with(&lone);
    let id = nj.submit(&["--", "sh", "-c", "echo via-fallback; exit 4"]);
    assert_eq!(nj.wait(id), 4);
    assert_eq!(nj.ok(&["logs", &id.to_string()]), "via-fallback\n");
}

#[test]
fn the_client_binary_links_neither_wasmtime_nor_sqlite() {
    // The slim client: its symbols and strings name no wasmtime, cranelift
    // or SQLite code (the daemon binary, for contrast, does).
    let has = |bin: &str, needle: &[u8]| {
        let bytes = std::fs::read(bin).unwrap();
        memchr::memmem::find(&bytes, needle).is_some()
    };
    for needle in [&b"wasmtime"[..], b"cranelift", b"sqlite3_prepare"] {
        assert!(
            !has(crate::harness::BIN, needle),
            "nightjar contains {}",
            String::from_utf8_lossy(needle)
        );
    }
    assert!(has(crate::harness::DAEMON_BIN, b"sqlite3_prepare"));
}

#[test]
fn the_supervisor_binary_links_no_wasmtime_sqlite_http_or_tls() {
    // Exec'd once per run: only the supervise crate's code. Its symbols and
    // strings name none of what the daemon links for plugins, the store,
    // HTTP and TLS (the daemon binary, for contrast, names each).
    let sup = std::path::Path::new(crate::harness::BIN).with_file_name("nightjar-supervise");
    let sup = std::fs::read(&sup).unwrap();
    let daemon = std::fs::read(crate::harness::DAEMON_BIN).unwrap();
    let has = |bytes: &[u8], needle: &[u8]| memchr::memmem::find(bytes, needle).is_some();
    for needle in [
        &b"wasmtime"[..],
        b"cranelift",
        b"sqlite3_prepare",
        b"hyper",
        b"rustls",
        b"tokio",
    ] {
        assert!(
            !has(&sup, needle),
            "nightjar-supervise contains {}",
            String::from_utf8_lossy(needle)
        );
        assert!(has(&daemon, needle), "{}", String::from_utf8_lossy(needle));
    }
}

#[test]
fn exit_statuses_name_the_failure_kind() {
    let mut nj = Nj::new("");
    nj.start();
    // 4: no such task, for every verb that names one.
    for verb in [
        &["show", "999"][..],
        &["why", "999"],
        &["cancel", "999"],
        &["hold", "999"],
    ] {
        let out = nj.cli(verb);
        assert_eq!(out.status.code(), Some(4), "{verb:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no task with id 999"), "{verb:?}: {err}");
    }
    // 1: the task is there, the action is not possible.
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0);
    let out = nj.cli(&["hold", &id.to_string()]);
    assert_eq!(out.status.code(), Some(1), "{:?}", out);
    // 2: usage.
    assert_eq!(nj.cli(&["show", "x"]).status.code(), Some(2));
}

/// A run's log the daemon cannot read (its own run folder) is the daemon's
/// failure, exit 7 and HTTP 500, not the caller's (it was exit 1, 400).
#[test]
fn a_log_the_daemon_cannot_read_is_its_failure_not_the_callers() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--", "sh", "-c", "echo hi"]);
    assert_eq!(nj.wait(id), 0);
    let run_dir = nj.show(id)["runs"][0]["run_dir"]
        .as_str()
        .map(std::path::PathBuf::from)
        .expect("the run's folder");
    let log = run_dir.join("stdout.log");
    std::fs::remove_file(&log).unwrap();
    std::fs::create_dir(&log).unwrap();
    let out = nj.cli(&["logs", &id.to_string()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err.contains("stdout.log") && err.contains("not in the request"),
        "{err}"
    );
}

#[test]
fn the_daemon_binary_sends_client_verbs_to_the_client() {
    let out = std::process::Command::new(crate::harness::DAEMON_BIN)
        .args(["ls"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`nightjar ls`"), "{err}");
}

#[test]
fn the_client_does_not_link_the_time_zone_database() {
    // Its tables hold some 29,000 pointers the loader relocates at every
    // start (about 250 page faults, a third of a millisecond per command).
    let bytes = std::fs::read(crate::harness::BIN).unwrap();
    let needle = b"America/Argentina/ComodRivadavia";
    assert!(memchr::memmem::find(&bytes, needle).is_none());
}

#[test]
fn an_empty_config_variable_counts_as_unset() {
    let mut nj = Nj::new("");
    nj.start();
    let out = std::process::Command::new(crate::harness::BIN)
        .env("NIGHTJAR_CONFIG", "")
        .env("NIGHTJAR_STATE_DIR", &nj.state)
        .args(["ls"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = std::process::Command::new(crate::harness::BIN)
        .env("NIGHTJAR_CONFIG", "")
        .env("NIGHTJAR_STATE_DIR", "")
        .env("XDG_STATE_HOME", nj.path("nowhere"))
        .env_remove("XDG_RUNTIME_DIR")
        .args(["ls"])
        .output()
        .unwrap();
    // The default state dir, where no daemon runs: not a usage error.
    assert_eq!(out.status.code(), Some(3), "{out:?}");
}
