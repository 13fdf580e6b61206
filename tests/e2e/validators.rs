//! Result validators on real runs: the built-in `outputs` validator
//! accepting, warning and rejecting; the example validator from its file;
//! and a hostile validator that tries every way out of its read-only view,
//! spins, sleeps, allocates, floods and panics.

use serde_json::Value;

use crate::harness::Nj;

const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE_VALIDATOR");
const LOSS_CURVE: &str = env!("NIGHTJAR_EXAMPLE_VALIDATOR_LOSS_CURVE");

/// Submits a task file with `body` (TOML) and returns its id.
fn submit_file(nj: &Nj, name: &str, body: &str) -> i64 {
    let file = nj.path("tasks").join(format!("{name}.toml"));
    std::fs::write(&file, body).unwrap();
    nj.submit(&[file.to_str().unwrap()])
}

/// A task that writes `metrics` as metrics.json and `frames` PNG files into
/// its output folder, judged by `validate` (TOML after `[[validate]]`).
fn training(nj: &Nj, name: &str, metrics: &str, frames: u32, validate: &str) -> i64 {
    let body = format!(
        "name = \"{name}\"\ncommand = '''mkdir -p \"$NIGHTJAR_OUTPUT_PATH/frames\"; for i in $(seq 1 {frames}); do echo frame > \"$NIGHTJAR_OUTPUT_PATH/frames/$i.png\"; done; echo '{metrics}' > \"$NIGHTJAR_OUTPUT_PATH/metrics.json\"; echo ${{OUTPUT_PATH}} > /dev/null'''\n[[validate]]\n{validate}\n"
    );
    submit_file(nj, name, &body)
}

fn findings(run: &Value) -> Vec<(String, String, String)> {
    run["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    (
                        f["validator"].as_str().unwrap_or_default().to_string(),
                        f["severity"].as_str().unwrap_or_default().to_string(),
                        f["message"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

const RULES: &str = "plugin = \"outputs\"\nrequired = [\"metrics.json\", \"frames/*.png\"]\ncount = [{ glob = \"frames/*.png\", min = 3 }]\njson = [{ file = \"metrics.json\", rules = [\"loss < 1.0\", \"accuracy >= 0.8\"] }]";

#[test]
fn the_outputs_validator_accepts_warns_and_rejects() {
    let mut nj = Nj::new("slots = 3");
    nj.start();
    let good = training(&nj, "good", r#"{"loss": 0.2, "accuracy": 0.91}"#, 3, RULES);
    let warned = training(
        &nj,
        "warned",
        r#"{"loss": 0.2, "accuracy": 0.91}"#,
        2,
        "plugin = \"outputs\"\ncount = [{ glob = \"frames/*.png\", min = 3, severity = \"warning\" }]",
    );
    let bad = training(&nj, "bad", r#"{"loss": NaN, "accuracy": 0.62}"#, 3, RULES);
    assert_eq!(nj.wait(good), 0);
    assert_eq!(nj.wait(warned), 0, "a warning keeps the run succeeded");
    assert_eq!(nj.wait(bad), 65, "validation-failed exits 65");
    let run = |id: i64| nj.show(id)["runs"][0].clone();
    assert_eq!(run(good)["class"], "ok");
    assert!(findings(&run(good)).is_empty(), "{}", run(good));
    assert_eq!(run(warned)["class"], "ok");
    let w = findings(&run(warned));
    assert!(
        w.len() == 1 && w[0].0 == "outputs" && w[0].1 == "warning",
        "{w:?}"
    );
    let bad_run = run(bad);
    assert_eq!(bad_run["class"], "validation-failed");
    assert_eq!(bad_run["exit_code"], 0);
    let f = findings(&bad_run);
    assert!(
        f.iter()
            .any(|(_, s, m)| s == "error" && m.contains("accuracy") && m.contains("0.62")),
        "{f:?}"
    );
    assert!(
        f.iter()
            .any(|(_, s, m)| s == "error" && m.contains("loss") && m.contains("NaN")),
        "NaN is refused: {f:?}"
    );
    let show = nj.ok(&["show", &bad.to_string()]);
    assert!(
        show.contains("validation-failed, exit 0") && show.contains("found   error [outputs]"),
        "{show}"
    );
    let ls = nj.ok(&["ls"]);
    assert!(
        ls.contains("validation-failed (exit 0): outputs found"),
        "{ls}"
    );
}

#[test]
fn a_validator_from_a_file_judges_a_run_and_a_missing_one_is_refused_at_submit() {
    let mut nj = Nj::new("");
    nj.start();
    let body = format!(
        "command = '''printf 'epoch,loss\\n1,2.0\\n2,1.0\\n3,0.5\\n' > \"$NIGHTJAR_OUTPUT_PATH/log.csv\"; : ${{OUTPUT_PATH}}'''\n[[validate]]\nplugin = \"{LOSS_CURVE}\"\nfile = \"log.csv\"\n"
    );
    let id = submit_file(&nj, "curve", &body);
    assert_eq!(nj.wait(id), 0, "{}", nj.show(id));
    let missing = nj.path("tasks").join("missing.toml");
    std::fs::write(
        &missing,
        "command = \"true\"\n[[validate]]\nplugin = \"nowhere/v.wasm\"\n",
    )
    .unwrap();
    let out = nj.cli(&["submit", missing.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("validate[1]: plugin") && err.contains("v.wasm"),
        "{err}"
    );
}

/// A task whose output folder holds a link to /etc, a link to /etc/passwd
/// and a file, and (when `hard`) a hard link to a file outside it.
fn planted(nj: &Nj, name: &str, mode: &str, hard: bool) -> i64 {
    let secret = nj.path("outside").join("secret.txt");
    std::fs::write(&secret, "outside the output folder\n").unwrap();
    let hard = if hard {
        format!("ln {} \"$O/hardlink\";", secret.display())
    } else {
        String::new()
    };
    let body = format!(
        "name = \"{name}\"\ncommand = '''O=\"$NIGHTJAR_OUTPUT_PATH\"; : ${{OUTPUT_PATH}}; ln -s /etc \"$O/etc-link\"; ln -s /etc/passwd \"$O/passwd-link\"; echo keep > \"$O/victim\"; {hard} true'''\n[[validate]]\nplugin = \"{HOSTILE}\"\nmode = \"{mode}\"\n"
    );
    submit_file(nj, name, &body)
}

#[test]
fn a_hostile_validator_cannot_leave_its_read_only_view() {
    let mut nj = Nj::new("");
    nj.start();
    let id = planted(&nj, "escape", "escape", false);
    assert_eq!(nj.wait(id), 0);
    let run = nj.show(id)["runs"][0].clone();
    let f = findings(&run);
    assert!(f.len() >= 18, "one finding per attempt: {f:?}");
    let opened: Vec<&String> = f
        .iter()
        .map(|(_, _, m)| m)
        .filter(|m| m.starts_with("OPENED"))
        .collect();
    assert!(opened.is_empty(), "every way out is closed: {opened:?}");
    for attempt in [
        "read /etc/passwd",
        "read /output/../etc/passwd",
        "list /output/..",
        "read /output/etc-link/passwd",
        "read /output/passwd-link",
        "write /output/written",
        "remove /output/victim",
        "clock",
        "env",
    ] {
        assert!(
            f.iter()
                .any(|(_, _, m)| m.starts_with(&format!("REFUSED {attempt}"))),
            "{attempt} was tried and refused: {f:?}"
        );
    }
    let out = std::path::PathBuf::from(run["run_dir"].as_str().unwrap()).join("output");
    assert_eq!(
        std::fs::read_to_string(out.join("victim")).unwrap(),
        "keep\n",
        "the output folder is unchanged"
    );
    assert!(!out.join("written").exists() && !out.join("newdir").exists());
}

#[test]
fn a_hard_link_in_the_outputs_fails_validation_unread() {
    let mut nj = Nj::new("");
    nj.start();
    let id = planted(&nj, "hard", "escape", true);
    assert_eq!(nj.wait(id), 65);
    let run = nj.show(id)["runs"][0].clone();
    assert_eq!(run["class"], "validation-failed");
    let f = findings(&run);
    assert!(
        f.len() == 1 && f[0].0 == "nightjar" && f[0].2.contains("2 hard links"),
        "the host refuses before the validator reads anything: {f:?}"
    );
}

#[test]
fn a_validator_that_spins_sleeps_allocates_floods_or_panics_fails_its_run_in_bounded_time() {
    let mut nj = Nj::new("slots = 6\n[validators]\ntimeout = \"1s\"\nmemory_limit = \"64MiB\"");
    nj.start();
    let cases = [
        ("spin", "timed out"),
        ("sleep", "would block"),
        ("memory", "memory"),
        ("flood", ""),
        ("panic", "trapped"),
        ("bad-config", "rejected its config at `mode`"),
    ];
    let ids: Vec<(i64, &str, &str)> = cases
        .iter()
        .map(|(mode, says)| (planted(&nj, mode, mode, false), *mode, *says))
        .collect();
    for (id, mode, says) in ids {
        let status = nj.wait(id);
        let run = nj.show(id)["runs"][0].clone();
        let f = findings(&run);
        if mode == "memory" {
            // Allocation failing inside the plugin is its own business: it
            // answers once refused, or traps at the cap.
            assert!(
                f.iter()
                    .any(|(_, _, m)| m.starts_with("ALLOCATED") || m.contains("memory")),
                "{mode}: {f:?}"
            );
            continue;
        }
        if mode == "flood" {
            assert!(f.len() <= 101, "findings are capped: {}", f.len());
            let bytes: usize = f.iter().map(|(_, _, m)| m.len()).sum();
            assert!(
                bytes <= 101 * 4096,
                "each capped at 1 KiB (escaped): {bytes}"
            );
            continue;
        }
        assert_eq!(status, 65, "{mode}: {run}");
        assert!(
            f.iter()
                .any(|(v, s, m)| v == "hostile_validator" && s == "error" && m.contains(says)),
            "{mode}: {f:?}"
        );
    }
    assert!(nj.ok(&["ls"]).contains("validation-failed"));
}

#[test]
fn a_daemon_killed_while_validating_validates_again_and_records_once() {
    // The validator spins to its 3 s deadline: time to kill the daemon while
    // its process has ended but the run is not recorded yet.
    let mut nj = Nj::new("[validators]\ntimeout = \"3s\"");
    nj.start();
    let ended = nj.path("markers").join("ended");
    let body = format!(
        "name = \"killed\"\ncommand = '''echo keep > \"$NIGHTJAR_OUTPUT_PATH/victim\"; : ${{OUTPUT_PATH}}; touch {}'''\n[[validate]]\nplugin = \"{HOSTILE}\"\nmode = \"spin\"\n",
        ended.display()
    );
    let id = submit_file(&nj, "killed", &body);
    nj.until("the task's process ended", || ended.exists());
    // Its supervisor now waits for the daemon, which is judging the run.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(nj.show(id)["task"]["state"], "running", "not recorded yet");
    nj.kill9();
    nj.start();
    assert_eq!(nj.wait(id), 65);
    let show = nj.show(id);
    let runs = show["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "one run, judged again, not run again");
    assert_eq!(runs[0]["class"], "validation-failed");
    assert!(
        findings(&runs[0])
            .iter()
            .any(|(_, _, m)| m.contains("timed out")),
        "{}",
        runs[0]
    );
    let finished = show["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "finished")
        .count();
    assert_eq!(finished, 1, "recorded once");
}

#[test]
fn a_projects_validators_judge_its_tasks_and_why_shows_the_finding() {
    let mut nj =
        Nj::new("[validate]\nvision = [{ plugin = \"outputs\", required = [\"model.pt\"] }]");
    nj.start();
    let vision = nj.submit(&[
        "--project",
        "vision",
        "--output",
        "out-${TASK_ID}",
        "--",
        "true",
    ]);
    let other = nj.submit(&[
        "--project",
        "nlp",
        "--output",
        "out-${TASK_ID}",
        "--",
        "true",
    ]);
    assert_eq!(
        nj.wait(vision),
        65,
        "the project's validator found no model.pt"
    );
    assert_eq!(
        nj.wait(other),
        0,
        "another project's tasks are not judged by it"
    );
    let why = nj.ok(&["why", &vision.to_string()]);
    assert!(
        why.contains("ended validation-failed: outputs found model.pt"),
        "why gives the class and its hint: {why}"
    );
}

#[test]
fn plugins_check_knows_a_validator_and_its_config() {
    let nj = Nj::new("");
    let out = nj.ok(&["plugins", "check", LOSS_CURVE]);
    assert!(
        out.contains("ok (result-validator, nightjar:plugin@0.2.3"),
        "{out}"
    );
    let bad = nj.path("cfg").join("bad.toml");
    std::fs::write(&bad, "min_drop = 3.0\n").unwrap();
    let out = nj.cli(&[
        "plugins",
        "check",
        LOSS_CURVE,
        "--plugin-config",
        bad.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("rejected its config at `min_drop`"),
        "{err}"
    );
}

#[test]
fn a_fifo_in_the_outputs_fails_validation_unopened_and_in_bounded_time() {
    let mut nj = Nj::new("");
    nj.start();
    let body = format!(
        "name = \"fifo\"\ncommand = '''mkfifo \"$NIGHTJAR_OUTPUT_PATH/pipe\"; echo x > \"$NIGHTJAR_OUTPUT_PATH/f\"; : ${{OUTPUT_PATH}}'''\n[[validate]]\nplugin = \"{HOSTILE}\"\nmode = \"escape\"\n"
    );
    let id = submit_file(&nj, "fifo", &body);
    assert_eq!(nj.wait(id), 65);
    let run = nj.show(id)["runs"][0].clone();
    assert_eq!(run["class"], "validation-failed");
    let f = findings(&run);
    assert!(
        f.len() == 1 && f[0].0 == "nightjar" && f[0].2.contains("is a fifo"),
        "the host refuses before a validator can open it: {f:?}"
    );
}
