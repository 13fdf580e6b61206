//! The policy chain in a running daemon: plugin files loaded, uploaded and
//! replaced, a configure that hangs the start, the example lab policy, and
//! the offline `plugins check` / `plugins test`. (The chain's decisions,
//! failures and `why` are the in-process tier's: `host/src/api/inproc/policies.rs`.)

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

#[test]
fn plugins_check_and_test_work_offline() {
    let nj = Nj::new("");
    let out = nj.ok(&["plugins", "check", HOSTILE]);
    assert!(out.contains("ok (delta-scheduling-policy"), "{out}");
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

/// A snapshot file's usage names each run's project (`plugins test
/// --snapshot`): fair-share reads it through the real component, the
/// project that used more scores lower; a row without a project is refused
/// with the file and the field; hundreds of distinct projects are read and
/// answered (past 4,096, where fair-share's memo starts afresh, is its unit
/// tests': a pass over that many is too near the 100 ms call limit for a
/// debug daemon on a loaded machine).
#[test]
fn plugins_test_reads_a_snapshots_usage_by_project_name_and_refuses_a_row_without_one() {
    let fair_share = env!("NIGHTJAR_FIRST_PARTY_FAIR_SHARE");
    let nj = Nj::new("");
    let hour = 3_600_000i64;
    let now = 100 * hour;
    let task = |id: i64, project: &str| {
        serde_json::json!({"id": id, "name": "t", "project": project, "priority": "Normal",
            "resources": {"gpus": 1, "gpu_mem": null, "cpus": null, "mem": null, "timeout": null},
            "submitted_at": 0, "eligible_at": 0, "attempts": 0, "estimated_runtime": null})
    };
    let used = |project: &str, hours: i64| {
        serde_json::json!({"project": project, "gpus": 1, "started_at": now - hours * hour,
            "ended_at": now})
    };
    let snapshot = |usage: Vec<serde_json::Value>| {
        serde_json::json!({"now": now, "time_zone": "UTC", "utc_offset": 0, "running": [],
            "gpus": [], "usage": usage, "queue": [task(1, "vision"), task(2, "bio")]})
    };
    let test = |name: &str, snap: &serde_json::Value| {
        let path = nj.path("work").join(name);
        std::fs::write(&path, snap.to_string()).unwrap();
        nj.cli(&[
            "plugins",
            "test",
            fair_share,
            "--snapshot",
            path.to_str().unwrap(),
        ])
    };
    let scores = |out: &std::process::Output| -> Vec<i64> {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut v: Vec<(i64, i64)> = (answer["verdicts"].as_array().unwrap().iter())
            .map(|v| {
                (
                    v["task"].as_i64().unwrap(),
                    v["verdict"]["Allow"].as_i64().unwrap(),
                )
            })
            .collect();
        v.sort();
        v.into_iter().map(|(_, s)| s).collect()
    };
    // vision used 9 GPU-hours, bio 1, in rows that name them apart.
    let mut usage = vec![used("vision", 5), used("bio", 1), used("vision", 4)];
    let s = scores(&test("usage.json", &snapshot(usage.clone())));
    assert_eq!(s, [-40, 40], "vision over its half, bio under it");
    // A row that names no project: refused, the file and the field named.
    usage.push(serde_json::json!({"gpus": 1, "started_at": 0, "ended_at": null}));
    let out = test("bad-row.json", &snapshot(usage));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad-row.json") && err.contains("`project`"),
        "{err}"
    );
    // 300 projects, each used for an hour, bio for 3,000: read and
    // answered (bio most of all use, vision none).
    let mut many: Vec<_> = (0..300).map(|k| used(&format!("p{k}"), 1)).collect();
    many.push(used("bio", 3_000));
    let s = scores(&test("many.json", &snapshot(many)));
    assert!(s[0] > s[1], "vision (unused) above bio: {s:?}");
}

#[test]
fn the_example_lab_policy_defers_its_projects_until_the_weekend() {
    // The daemon's clock is faked to a Wednesday noon (UTC) of this week,
    // then stepped to that Saturday's noon: both of the policy's answers are
    // checked whatever day the test runs, and none depends on the real
    // clock crossing a midnight between the daemon's pass and the test's
    // look (on a Sunday at 23:59 the daemon ran render, and the test, a
    // moment later on Monday, expected it deferred).
    let example = env!("NIGHTJAR_EXAMPLE_POLICY_WEEKENDS");
    let mut nj = Nj::new(
        "timezone = \"UTC\"\n[plugins]\nchain = [\"weekends\"]\n[plugin.weekends.config]\nprojects = \"render\"\n",
    );
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(example, dir.join("weekends.wasm")).unwrap();
    let real = chrono::Utc::now().timestamp();
    // Today's weekday, Monday 0 (1970-01-01 was a Thursday).
    let weekday = (real.div_euclid(86_400) + 3).rem_euclid(7);
    let wednesday_noon = (real.div_euclid(86_400) - weekday + 2) * 86_400 + 12 * 3600;
    let offset = crate::faults_clock::faked_clock(&mut nj, wednesday_noon - real);
    nj.start();
    let render = nj.submit(&["--project", "render", "--", "true"]);
    let other = nj.submit(&["--project", "vision", "--", "true"]);
    assert_eq!(nj.wait(other), 0);
    nj.until("render deferred", || {
        nj.show(render)["task"]["reason"].as_str().is_some()
    });
    let t = nj.show(render)["task"].clone();
    assert_eq!(t["state"], "queued", "{t}");
    assert_eq!(
        t["reason"], "deferred by weekends: project render runs at weekends only",
        "{t}"
    );
    // Saturday noon: the step has the policies asked again, and render runs.
    let saturday_noon = wednesday_noon + 3 * 86_400;
    let real = chrono::Utc::now().timestamp();
    std::fs::write(&offset, format!("{:+}\n", saturday_noon - real)).unwrap();
    assert_eq!(nj.wait(render), 0, "at weekends render runs");
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

/// A plugin whose configure never returns, in a real daemon's start: it
/// is recorded as timed out, and with `on_failure = "open"` the daemon
/// starts and keeps scheduling. (Every other hostile behaviour is the
/// in-process tier's: `host/src/api/inproc/policies.rs`.)
#[test]
fn a_plugin_whose_configure_hangs_is_recorded_and_open_keeps_scheduling() {
    let mut nj = world(
        "[plugins]\nchain = [\"hostile\"]\nevaluate_timeout = \"1s\"\n[plugin.hostile]\non_failure = \"open\"\n[plugin.hostile.config]\nmode = \"hang-config\"\n",
    );
    nj.start();
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0, "open keeps scheduling");
    let v = nj.json(&["plugins", "ls"]);
    let err = v[0]["last_error"].as_str().unwrap_or_default().to_string();
    assert!(err.contains("timed out"), "expected `timed out` in `{err}`");
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
