//! A hostile policy in a running daemon: whatever it does (sleep, block,
//! spam, ask for passes on demand, preempt everything, fail every second
//! call), the API keeps answering, the daemon stays within its memory, its
//! log and database stay bounded, other tasks run, and SIGTERM stops it.

use std::time::{Duration, Instant};

use crate::harness::Nj;

const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");

/// A world whose plugin folder holds the hostile plugin in `mode`.
fn attacked(mode: &str, extra: &str) -> Nj {
    let nj = Nj::new(&format!(
        "slots = 2\n[plugins]\nchain = [\"hostile\"]\n{extra}\n[plugin.hostile.config]\nmode = \"{mode}\"\n"
    ));
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(HOSTILE, dir.join("hostile.wasm")).unwrap();
    nj
}

/// Resident memory of `pid`, bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

/// The slowest `nightjar ls` over `span`, asked every 100 ms.
fn slowest_ls(nj: &Nj, span: Duration) -> Duration {
    let t0 = Instant::now();
    let mut worst = Duration::ZERO;
    while t0.elapsed() < span {
        let t = Instant::now();
        let out = nj.cli(&["ls"]);
        worst = worst.max(t.elapsed());
        assert!(
            out.status.success(),
            "ls failed during the attack: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    worst
}

/// Runs `mode` against a daemon: the API answers throughout (a freeze was
/// minutes; 2 s is far from both), RSS stays under the plugin cap + 100 MB,
/// and a task of project `free` runs to the end.
fn contained(mode: &str) {
    let mut nj = attacked(mode, "min_pass_interval = \"200ms\"");
    nj.start();
    nj.submit(&["--project", "victim", "--preemptible", "--", "sleep", "30"]);
    let free = nj.submit(&["--project", "free", "--", "true"]);
    let worst = slowest_ls(&nj, Duration::from_secs(3));
    assert!(
        worst < Duration::from_secs(2),
        "{mode}: ls took {worst:?}; log:\n{}",
        nj.daemon_log()
    );
    assert_eq!(nj.wait(free), 0, "{mode}: other tasks run");
    let pid = nj.daemon_pid().unwrap();
    let rss = rss(pid);
    assert!(
        rss < (64 + 100) << 20,
        "{mode}: daemon RSS {rss} over the plugin cap + 100 MB"
    );
    assert!(crate::harness::alive(pid as i32), "{mode}: daemon alive");
}

#[test]
fn sleeping_in_evaluate_is_contained() {
    contained("sleep");
    contained("sleep-forever");
}

#[test]
fn asking_for_passes_on_demand_is_contained() {
    contained("until-now");
    contained("until-past");
    contained("until-min");
}

#[test]
fn giant_reasons_preempt_storms_and_flaky_answers_are_contained() {
    contained("preempt-huge");
    contained("flaky");
    contained("random");
}

#[test]
fn a_plugin_sleeping_in_configure_does_not_keep_the_socket_closed() {
    let mut nj = attacked("sleep-config", "");
    nj.start();
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0, "on_failure open: the chain is ignored");
    let v = nj.json(&["plugins", "ls"]);
    assert!(
        v[0]["last_error"]
            .as_str()
            .unwrap_or("")
            .contains("blocking-call"),
        "{v}"
    );
}

#[test]
fn a_plugin_failing_every_second_call_is_disabled_by_the_window() {
    let mut nj = attacked("flaky", "min_pass_interval = \"50ms\"");
    nj.start();
    // Each submit is a pass over a queue that stays full; half of them fail.
    for _ in 0..12 {
        nj.submit(&["--preemptible", "--", "sleep", "30"]);
    }
    nj.until("disabled after 3 of its last 10 calls", || {
        nj.json(&["plugins", "ls"])[0]["state"] == "disabled"
    });
    let v = nj.json(&["plugins", "ls"]);
    assert_eq!(v[0]["last_cause"], "trap", "{v}");
    assert!(v[0]["last_failure_at"].as_i64().is_some(), "{v}");
    assert!(
        v[0]["failure_rate"].as_str().unwrap().starts_with("3/"),
        "{v}"
    );
}

#[test]
fn sigterm_stops_the_daemon_before_a_computing_plugins_deadline() {
    // A 20 s deadline: a pass is inside the plugin when SIGTERM arrives.
    let mut nj = attacked("loop", "evaluate_timeout = \"20s\"");
    nj.start();
    nj.submit(&["--", "true"]);
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    let status = nj.term();
    assert!(status.success(), "{status:?}");
    // Not after the plugin's 20 s deadline: 10 s tells the two apart on a
    // loaded machine too.
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "stopped after {:?}",
        t.elapsed()
    );
}

#[test]
fn a_spamming_plugin_leaves_the_log_and_database_bounded() {
    // Passes as often as every 100 ms: unbounded, 15 s of them would write
    // over 15 MiB.
    let mut nj = attacked("spam", "min_pass_interval = \"100ms\"");
    nj.start();
    for _ in 0..5 {
        nj.submit(&["--", "true"]);
    }
    let db = |nj: &Nj| -> u64 {
        ["nightjar.db", "nightjar.db-wal"]
            .iter()
            .filter_map(|f| std::fs::metadata(nj.state.join(f)).ok())
            .map(|m| m.len())
            .sum()
    };
    std::thread::sleep(Duration::from_secs(2));
    let (log0, db0) = (nj.daemon_log().len() as u64, db(&nj));
    // The plugin asks for a pass at once, every pass, and writes 108 KiB
    // each time.
    std::thread::sleep(Duration::from_secs(15));
    let (log1, db1) = (nj.daemon_log().len() as u64, db(&nj));
    assert!(
        log1 - log0 < 1 << 20,
        "daemon log grew {} bytes in 15 s",
        log1 - log0
    );
    assert!(
        db1.saturating_sub(db0) < 1 << 20,
        "database grew {} bytes",
        db1 - db0
    );
    // The minute's summary of what was dropped is the budget's own test
    // (`plugins/sink.rs`): waiting a minute for it here cost a minute.
}

#[test]
fn a_preempt_everything_policy_cannot_thrash() {
    let mut nj = attacked("preempt-all", "preempt_min_runtime = \"3s\"");
    std::fs::write(
        &nj.config,
        std::fs::read_to_string(&nj.config)
            .unwrap()
            .replace("slots = 2", "slots = 1"),
    )
    .unwrap();
    nj.start();
    let a = nj.submit(&["--preemptible", "--", "sleep", "30"]);
    nj.until("a runs", || nj.show(a)["task"]["state"] == "running");
    let b = nj.submit(&["--preemptible", "--", "sleep", "30"]);
    // Too early: the request is refused, and `why` says so.
    nj.until("the refusal is visible in why", || {
        nj.ok(&["why", &a.to_string()])
            .contains("not honoured: it has run")
    });
    std::thread::sleep(Duration::from_secs(8));
    let starts = |id: i64| nj.show(id)["runs"].as_array().map_or(0, |r| r.len());
    let (sa, sb) = (starts(a), starts(b));
    assert!(sa <= 2 && sb <= 2, "a started {sa} times, b {sb} in 8 s");
    assert!(sb >= 1, "the waiting task got its turn");
    nj.ok(&["cancel", &a.to_string()]);
    nj.ok(&["cancel", &b.to_string()]);
}

#[test]
fn a_gpu_closed_by_a_policy_shows_closed_with_the_policy_and_reason() {
    let mut nj = attacked(
        "close-gpu",
        "[gpu]\nbackend = \"sim:1xA100-80GB\"\nsample_period = \"100ms\"\nhost_mem_min_free = \"1MiB\"",
    );
    nj.start();
    let id = nj.submit(&["--gpus", "1", "--", "true"]);
    nj.until("the pass closed GPU 0", || {
        nj.json(&["gpus"])[0]["open"] == false
    });
    let g = nj.json(&["gpus"]);
    assert!(
        g[0]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("closed by hostile: closed by the hostile test plugin"),
        "{g}"
    );
    let table = nj.ok(&["gpus"]);
    assert!(
        table.contains("closed") && table.contains("hostile"),
        "{table}"
    );
    let why = nj.ok(&["why", &id.to_string()]);
    assert!(why.contains("GPU 0: closed by hostile"), "{why}");
    let typed = nj.json(&["why", &id.to_string()]);
    assert_eq!(
        typed["fit"]["gpus"][0]["unusable"]["kind"], "closed-by-policy",
        "--json why is structured: {typed}"
    );
}

#[test]
fn plugin_folder_entries_show_their_real_kind() {
    let mut nj = attacked("ok", "");
    let file = nj.state.join("plugins/hostile.wasm");
    std::fs::remove_file(&file).unwrap();
    let c = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path that lives for the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    nj.start();
    let v = nj.json(&["plugins", "ls"]);
    assert_eq!(v[0]["source"], file.display().to_string(), "{v}");
    assert!(
        v[0]["last_error"]
            .as_str()
            .unwrap_or("")
            .contains("FIFO: not a regular file"),
        "{v}"
    );
    let out = nj.cli(&["plugins", "check", file.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("FIFO"));
}

#[test]
fn reasons_that_change_every_pass_leave_the_events_table_bounded() {
    // Every task deferred with a new 4,000-character reason every pass (at
    // most every 200 ms here): 20 tasks would add 400 KB of events a second.
    let mut nj = attacked("churn", "min_pass_interval = \"200ms\"");
    nj.start();
    for _ in 0..20 {
        nj.submit(&["--", "true"]);
    }
    let events = |nj: &Nj| -> u64 {
        let db = rusqlite::Connection::open(nj.state.join("nightjar.db")).unwrap();
        db.busy_timeout(Duration::from_secs(5)).unwrap();
        db.query_row(
            "SELECT coalesce(sum(length(message)), 0) FROM events",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap() as u64
    };
    std::thread::sleep(Duration::from_secs(2));
    let before = events(&nj);
    // Unbounded, 8 s of passes would add over 3 MB.
    std::thread::sleep(Duration::from_secs(8));
    let grown = events(&nj) - before;
    assert!(
        grown < 200 << 10,
        "the events table grew {grown} bytes in 8 s; log:\n{}",
        nj.daemon_log()
    );
    let worst = slowest_ls(&nj, Duration::from_secs(2));
    assert!(worst < Duration::from_secs(2), "ls took {worst:?}");
}

/// A forecast asks its own copy of the chain on the API's thread, not on
/// plugin threads (`Chain::load_here`): a policy that loops, sleeps, or
/// allocates without end there costs the forecast its deadlines and limits,
/// and the forecast still answers; the daemon answers `ls` and runs tasks.
#[test]
fn a_forecast_through_a_hostile_policy_still_answers_and_the_daemon_goes_on() {
    for mode in ["loop", "sleep", "alloc"] {
        let mut nj = attacked(mode, "");
        nj.start();
        let free = nj.submit(&["--project", "free", "--", "true"]);
        // A task not queued: its forecast plays the queue with it through
        // the chain from the first pass.
        let forecast = nj.cli(&[
            "submit",
            "--dry-run",
            "--timeout",
            "10m",
            "--name",
            "try",
            "--",
            "true",
        ]);
        let text = String::from_utf8_lossy(&forecast.stdout);
        assert!(
            forecast.status.success()
                && text.contains("task try (not queued: --dry-run)")
                && text.contains("simulated: policy chain hostile"),
            "{mode}: the forecast: {text}{}\nlog:\n{}",
            String::from_utf8_lossy(&forecast.stderr),
            nj.daemon_log()
        );
        assert!(nj.cli(&["ls"]).status.success(), "{mode}: ls after");
        assert_eq!(nj.wait(free), 0, "{mode}: other tasks run");
        let pid = nj.daemon_pid().unwrap();
        assert!(crate::harness::alive(pid as i32), "{mode}: daemon alive");
    }
}
