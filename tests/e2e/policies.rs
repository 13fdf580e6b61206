//! The policy chain in a running daemon: a built-in policy, a plugin file,
//! failures recorded with their cause, on_failure open and closed, and the
//! offline `plugins check` / `plugins test`.

use crate::harness::{Nj, read};

const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");

/// A world whose plugin folder holds the hostile test plugin.
pub(crate) fn world(config: &str) -> Nj {
    let nj = Nj::new(&format!("slots = 1\n{config}"));
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(HOSTILE, dir.join("hostile.wasm")).unwrap();
    nj
}

pub(crate) fn started_at(nj: &Nj, id: i64) -> i64 {
    nj.show(id)["runs"][0]["started_at"].as_i64().unwrap()
}

#[test]
fn the_built_in_priority_policy_orders_by_its_configured_weights() {
    // Weights turned upside down, so the order can only come from the plugin.
    let mut nj = world(
        "[plugins]\nchain = [\"priority\"]\n[plugin.priority.config]\nweights = { low = 1000, normal = 10, high = 0, urgent = 0 }\n",
    );
    nj.start();
    let blocker = nj.submit(&["--", "sleep", "0.5"]);
    let urgent = nj.submit(&["--priority", "urgent", "--", "true"]);
    let normal = nj.submit(&["--", "true"]);
    let low = nj.submit(&["--priority", "low", "--", "true"]);
    for id in [blocker, urgent, normal, low] {
        assert_eq!(nj.wait(id), 0);
    }
    let (u, n, l) = (
        started_at(&nj, urgent),
        started_at(&nj, normal),
        started_at(&nj, low),
    );
    assert!(
        l <= n && n <= u,
        "low ({l}) before normal ({n}) before urgent ({u})"
    );
    let ls = nj.ok(&["plugins", "ls"]);
    assert!(
        ls.contains("priority") && ls.contains("built-in") && ls.contains("ok"),
        "{ls}"
    );
}

#[test]
fn a_deferral_keeps_the_task_waiting_with_the_policys_reason() {
    let mut nj = world("[plugins]\nchain = [\"hostile\"]\n");
    nj.start();
    let held = nj.submit(&["--project", "held-by-plugin", "--", "true"]);
    let free = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(free), 0);
    let t = nj.show(held)["task"].clone();
    assert_eq!(t["state"], "queued");
    assert_eq!(
        t["reason"],
        "deferred by hostile: held by the hostile test plugin"
    );
    assert!(nj.ok(&["ls"]).contains("deferred by hostile"));
}

#[test]
fn a_looping_policy_times_out_is_disabled_and_open_keeps_scheduling() {
    let mut nj = world(
        "[plugins]\nchain = [\"hostile\"]\nmax_failures = 2\nevaluate_timeout = \"50ms\"\n[plugin.hostile]\non_failure = \"open\"\n[plugin.hostile.config]\nmode = \"loop\"\n",
    );
    nj.start();
    let a = nj.submit(&["--", "true"]);
    let b = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(a), 0, "open: the failing plugin is ignored");
    assert_eq!(nj.wait(b), 0);
    let v = nj.json(&["plugins", "ls"]);
    assert_eq!(v[0]["state"], "disabled", "{v}");
    assert!(
        v[0]["last_error"].as_str().unwrap().contains("timed out"),
        "{v}"
    );
}

#[test]
fn a_panicking_policy_with_on_failure_closed_starts_nothing() {
    let mut nj = world(
        "[plugins]\nchain = [\"hostile\"]\n[plugin.hostile]\non_failure = \"closed\"\n[plugin.hostile.config]\nmode = \"panic\"\n",
    );
    nj.start();
    let id = nj.submit(&["--", "true"]);
    nj.until("the plugin failed", || {
        nj.json(&["plugins", "ls"])[0]["failures"]
            .as_u64()
            .unwrap_or(0)
            >= 1
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        nj.show(id)["task"]["state"],
        "queued",
        "closed: nothing starts while it fails"
    );
    let v = nj.json(&["plugins", "ls"]);
    assert!(v[0]["last_error"].as_str().unwrap().contains("trap"), "{v}");
}

#[test]
fn a_policy_that_names_unknown_tasks_is_an_invalid_answer() {
    let mut nj = world(
        "[plugins]\nchain = [\"hostile\"]\n[plugin.hostile.config]\nmode = \"unknown-task\"\n",
    );
    nj.start();
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0, "on_failure defaults to open");
    let v = nj.json(&["plugins", "ls"]);
    assert!(
        v[0]["last_error"]
            .as_str()
            .unwrap()
            .contains("not in the queue"),
        "{v}"
    );
}

#[test]
fn plugins_check_and_test_work_offline() {
    let nj = Nj::new("");
    let out = nj.ok(&["plugins", "check", HOSTILE]);
    assert!(out.contains("ok (scheduling-policy"), "{out}");
    let junk = nj.path("work").join("junk.wasm");
    std::fs::write(&junk, b"not wasm").unwrap();
    let bad = nj.cli(&["plugins", "check", junk.to_str().unwrap()]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a valid component"));
    let snap = nj.path("work").join("snap.json");
    std::fs::write(
        &snap,
        r#"{"now": 0, "time_zone": "UTC", "utc_offset": 0, "running": [], "gpus": [], "usage": [],
            "queue": [{"id": 7, "name": "t", "project": "held-by-plugin", "priority": "Normal",
                       "resources": {"gpus": 0, "gpu_mem": null, "cpus": null, "mem": null, "timeout": null},
                       "submitted_at": 0, "eligible_at": 0, "attempts": 0, "estimated_runtime": null}]}"#,
    )
    .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&nj.ok(&[
        "plugins",
        "test",
        HOSTILE,
        "--snapshot",
        snap.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(answer["verdicts"][0]["task"], 7, "{answer}");
    assert!(read(&snap).contains("held-by-plugin"));
}

#[test]
fn the_example_lab_policy_defers_its_projects_until_the_weekend() {
    let example = env!("NIGHTJAR_EXAMPLE_POLICY_WEEKENDS");
    let mut nj = Nj::new(
        "timezone = \"UTC\"\n[plugins]\nchain = [\"weekends\"]\n[plugin.weekends.config]\nprojects = \"render\"\n",
    );
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(example, dir.join("weekends.wasm")).unwrap();
    nj.start();
    let render = nj.submit(&["--project", "render", "--", "true"]);
    let other = nj.submit(&["--project", "vision", "--", "true"]);
    assert_eq!(nj.wait(other), 0);
    let weekday = {
        let days = chrono::Utc::now().timestamp().div_euclid(86_400);
        (days + 3).rem_euclid(7)
    };
    let t = nj.show(render)["task"].clone();
    if weekday < 5 {
        assert_eq!(t["state"], "queued");
        assert_eq!(
            t["reason"],
            "deferred by weekends: project render runs at weekends only"
        );
    } else {
        assert_eq!(nj.wait(render), 0, "at weekends render runs");
    }
}

#[test]
fn a_bad_upload_leaves_the_old_plugin_running_and_a_good_one_replaces_it() {
    let mut nj = world("[plugins]\nchain = [\"hostile\"]\n");
    nj.start();
    let file = nj.state.join("plugins/hostile.wasm");
    let held = nj.submit(&["--project", "held-by-plugin", "--", "true"]);
    nj.until("deferred", || {
        nj.show(held)["task"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("hostile"))
    });
    let old_sha = nj.json(&["plugins", "ls"])[0]["sha256"].clone();

    // A broken upload: rejected, the old version keeps deferring.
    std::fs::write(&file, b"\0asm broken upload").unwrap();
    let out = nj.cli(&["plugins", "reload"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("new version rejected"));
    let v = nj.json(&["plugins", "ls"]);
    assert_eq!(v[0]["sha256"], old_sha, "the old version still runs");
    assert!(
        v[0]["last_error"]
            .as_str()
            .unwrap()
            .contains("previous version keeps running"),
        "{v}"
    );
    assert_eq!(nj.show(held)["task"]["state"], "queued");

    // A good one (here: the example policy under the same name) replaces it,
    // found by the folder watch without asking.
    std::fs::copy(env!("NIGHTJAR_EXAMPLE_POLICY_WEEKENDS"), &file).unwrap();
    nj.until("the new version is loaded", || {
        nj.json(&["plugins", "ls"])[0]["sha256"] != old_sha
    });
    assert_eq!(nj.json(&["plugins", "ls"])[0]["state"], "ok");
    assert_eq!(
        nj.wait(held),
        0,
        "the new policy does not hold that project"
    );
}

#[test]
fn why_explains_a_deferral_a_dependency_and_a_start_with_its_score() {
    let mut nj = world("[plugins]\nchain = [\"priority\", \"hostile\"]\n");
    nj.start();
    let held = nj.submit(&["--project", "held-by-plugin", "--", "true"]);
    let ran = nj.submit(&["--priority", "high", "--", "true"]);
    let waits = nj.submit(&["--after", &held.to_string(), "--", "true"]);
    assert_eq!(nj.wait(ran), 0);
    nj.until("deferred", || {
        nj.show(held)["task"]["reason"].as_str().is_some()
    });
    let why = nj.ok(&["why", &held.to_string()]);
    assert!(
        why.contains("waiting: deferred by hostile: held by the hostile test plugin"),
        "{why}"
    );
    assert!(
        why.contains("  hostile: defer (held by the hostile test plugin) since"),
        "every policy's verdict: {why}"
    );
    assert!(why.contains("  priority: allow (score 100) since"), "{why}");
    let why = nj.ok(&["why", &ran.to_string()]);
    assert!(why.contains("score 200 = priority 200"), "{why}");
    let why = nj.ok(&["why", &waits.to_string()]);
    assert!(
        why.contains(&format!("waiting for dependencies: {held}")),
        "{why}"
    );
}

/// Every hostile behaviour, in a daemon: the cause is recorded against the
/// plugin, and with `on_failure = "open"` the daemon keeps scheduling.
#[test]
fn every_hostile_plugin_is_recorded_with_its_cause_and_open_keeps_scheduling() {
    let cases = [
        ("loop", "timed out"),
        ("alloc", "memory limit"),
        ("recurse", "trap"),
        ("panic", "trap"),
        ("huge", "memory limit"),
        ("unknown-task", "not in the queue"),
        ("unknown-gpu", "exist"),
        ("hang-config", "timed out"),
    ];
    for (mode, cause) in cases {
        let mut nj = world(&format!(
            "[plugins]\nchain = [\"hostile\"]\nevaluate_timeout = \"1s\"\n[plugin.hostile]\non_failure = \"open\"\n[plugin.hostile.config]\nmode = \"{mode}\"\n"
        ));
        nj.start();
        let id = nj.submit(&["--", "true"]);
        assert_eq!(nj.wait(id), 0, "{mode}: open keeps scheduling");
        let v = nj.json(&["plugins", "ls"]);
        let err = v[0]["last_error"].as_str().unwrap_or_default().to_string();
        assert!(err.contains(cause), "{mode}: expected `{cause}` in `{err}`");
    }
}

#[test]
fn plugins_test_refuses_a_snapshot_or_config_that_never_ends() {
    let nj = Nj::new("");
    let out = nj.cli(&["plugins", "test", HOSTILE, "--snapshot", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("snapshot /dev/zero is larger than 256 MiB"),
        "{err}"
    );
    let out = nj.cli(&["plugins", "check", HOSTILE, "--plugin-config", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/dev/zero is larger than 1 MiB"), "{err}");
}
