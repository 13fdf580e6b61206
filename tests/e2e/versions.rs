//! Versions of the plugin contract in a running daemon: a 0.1 component
//! built from the current sources (tests/plugins/legacy-v0_1, bound to the
//! frozen `wit/nightjar-plugin@0.1.0`, as the lab's existing `.wasm` files
//! are) in one chain with the first-party priority policy on 0.2; `plugins
//! ls` and `plugins check` say which version each implements.

use std::process::{Command, Output};

use crate::harness::{BIN, Nj};

const V0_1: &str = env!("NIGHTJAR_TEST_PLUGIN_V0_1");

fn started_at(nj: &Nj, id: i64) -> i64 {
    nj.show(id)["runs"][0]["started_at"].as_i64().unwrap()
}

#[test]
fn a_0_1_plugin_runs_beside_a_0_2_plugin_and_its_verdicts_take_effect() {
    let mut nj = Nj::new("slots = 1\n[plugins]\nchain = [\"priority\", \"legacy\"]\n");
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(V0_1, dir.join("legacy.wasm")).unwrap();
    nj.start();
    let blocker = nj.submit(&["--", "sleep", "0.5"]);
    nj.until("the blocker runs", || {
        nj.show(blocker)["task"]["state"] == "running"
    });
    // Same class, `vision` first: only the 0.1 plugin's score puts the
    // `legacy-first` task ahead.
    let vision = nj.submit(&["--project", "vision", "--", "true"]);
    let first = nj.submit(&["--project", "legacy-first", "--", "true"]);
    let held = nj.submit(&["--project", "legacy-held", "--", "true"]);
    assert_eq!(nj.wait(vision), 0);
    assert_eq!(nj.wait(first), 0);
    assert!(
        started_at(&nj, first) <= started_at(&nj, vision),
        "the 0.1 plugin's score orders the start"
    );
    let why = nj.ok(&["why", &first.to_string()]);
    assert!(why.contains("= priority 100 + legacy 1000"), "{why}");
    let t = nj.show(held)["task"].clone();
    assert_eq!(t["state"], "queued");
    assert_eq!(
        t["reason"],
        "deferred by legacy: held by the 0.1 plugin legacy"
    );
    let v = nj.json(&["plugins", "ls"]);
    let versions: Vec<(&str, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap(),
                m["api_version"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(versions, [("priority", "0.2.3"), ("legacy", "0.1.0")]);
    let table = nj.ok(&["plugins", "ls"]);
    assert!(table.contains("API") && table.contains("0.1.0"), "{table}");
}

/// `nightjar plugins check FILE`, offline, with no config at all (the
/// harness's `--config` would reach the plugin as its config).
fn check(file: &str) -> Output {
    Command::new(BIN)
        .args(["plugins", "check", file])
        .output()
        .expect("run nightjar")
}

#[test]
fn plugins_check_reports_the_version_of_each_plugin() {
    let nj = Nj::new("");
    for (file, world) in [
        (V0_1, "scheduling-policy, nightjar:plugin@0.1.0"),
        (
            env!("NIGHTJAR_EXAMPLE_POLICY_WEEKENDS"),
            "delta-scheduling-policy, nightjar:plugin@0.2.3",
        ),
        (
            env!("NIGHTJAR_TEST_PLUGIN_V0_2_2"),
            "incremental-scheduling-policy, nightjar:plugin@0.2.2",
        ),
    ] {
        let out = check(file);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(&format!("ok ({world}")), "{text}");
    }
    // A component of a version this host does not load: named, with the
    // version found and those supported.
    let future = nj.path("work").join("future.wasm");
    std::fs::write(
        &future,
        wat::parse_str(
            r#"(component (instance $a) (export "nightjar:plugin/policy@0.3.0" (instance $a)))"#,
        )
        .unwrap(),
    )
    .unwrap();
    let bad = check(future.to_str().unwrap());
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains(&future.display().to_string())
            && err.contains("nightjar:plugin/policy@0.3.0")
            && err.contains("0.1.0, 0.2.0, 0.2.1, 0.2.2, 0.2.3"),
        "{err}"
    );
}
