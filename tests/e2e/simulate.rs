//! `nightjar simulate` as a user runs it: the client hands the trace to
//! `nightjard`, which prints the figures (text or `--json`) and writes the
//! schedule; a bad trace or a missing machine size is a clear error and
//! exit 1. (The simulator's rules are the unit tests' and the reference
//! comparison's: `host/src/daemon/sim/`.)

use std::process::Command;

use crate::harness::{BIN, Nj};

/// Two GPUs; job 2 wants both while job 1 holds one, job 3 is short.
const TRACE: &str = "id,arrival_s,gpus,duration_s\n1,0,1,10\n2,1,2,4\n3,2,1,5\n";

#[test]
fn simulate_prints_json_figures_and_writes_the_schedule() {
    // No chain: the built-in order decides.
    let nj = Nj::new("[plugins]\nchain = []\n");
    let work = nj.path("work");
    std::fs::write(work.join("t.csv"), TRACE).unwrap();
    let out = nj.ok(&[
        "simulate",
        "t.csv",
        "--gpus",
        "2",
        "--order",
        "strict",
        "--json",
        "--schedule",
        "s.csv",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs"], 3);
    assert_eq!(v["makespan_s"], 19.0);
    assert_eq!(v["wait_s"]["max"], 12.0);
    assert_eq!(v["jct_s"]["p99"], 17.0);
    for key in ["mean", "p50", "p95", "p99"] {
        assert!(v["jct_s"][key].is_number(), "jct_s.{key}: {v}");
    }
    assert!(v["utilisation"].as_f64().unwrap() > 0.6, "{v}");
    assert!(v["passes"].as_u64().unwrap() >= 3, "{v}");
    assert_eq!(
        std::fs::read_to_string(work.join("s.csv")).unwrap(),
        "id,start_s,end_s,gpus,gpu_ids,preempted\n1,0,10,1,\"0\",0\n2,10,14,2,\"0 1\",0\n3,14,19,1,\"0\",0\n"
    );
    // The page: the figures, the Gantt of both GPUs and the queue's length.
    nj.ok(&["simulate", "t.csv", "--gpus", "2", "--html", "s.html"]);
    let html = std::fs::read_to_string(work.join("s.html")).unwrap();
    assert!(html.starts_with("<!doctype html>"), "{html:.200}");
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(
        html.contains("jobs         3 (3 ran, 0 never started)"),
        "{html:.600}"
    );
}

#[test]
fn simulate_on_embedded_defaults_prints_a_table_and_asks_the_default_chain() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), TRACE).unwrap();
    let out = Command::new(BIN)
        .args(["simulate", "t.csv", "--gpus", "2"])
        .env_remove("NIGHTJAR_CONFIG")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with("jobs         3 (3 ran, 0 never started)\n"),
        "{text}"
    );
    assert!(text.contains("on 2 GPUs"), "{text}");
    let passes = text.lines().find(|l| l.starts_with("passes")).unwrap();
    let words: Vec<&str> = passes.split_whitespace().collect();
    assert_eq!(
        words[1],
        words[2].trim_start_matches('('),
        "every pass asked the chain: {passes}"
    );
    assert!(text.contains("\nPROJECT "), "{text}");
}

#[test]
fn a_bad_trace_and_an_unsized_machine_are_refused_with_what_to_do() {
    let nj = Nj::new("[plugins]\nchain = []\n");
    let work = nj.path("work");
    std::fs::write(
        work.join("bad.csv"),
        "id,arrival_s,gpus,duration_s\n1,0,1,60\n2,NaN,1,60\n",
    )
    .unwrap();
    let out = nj.cli(&["simulate", "bad.csv", "--gpus", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("trace bad.csv, line 3, column arrival_s: `NaN` is not a time"),
        "{err}"
    );
    std::fs::write(work.join("t.csv"), TRACE).unwrap();
    let out = nj.cli(&["simulate", "t.csv"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("how many GPUs? give --gpus N"), "{err}");
    let out = nj.cli(&["simulate", "t.csv", "--gpus", "2", "--start", "yesterday"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--start yesterday:"));
    let out = nj.cli(&["simulate", "t.csv", "--gpus", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--gpus 0: a simulated machine needs at least one GPU")
    );
    // A config to compare with is read as any config is: at most 1 MiB.
    let out = nj.cli(&["simulate", "t.csv", "--gpus", "2", "--compare", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config file /dev/zero is larger than 1 MiB"),
        "{err}"
    );
}

/// The repository's root (examples, docs).
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn the_guides_figures_are_what_simulate_prints_for_the_example_week() {
    let guide = std::fs::read_to_string(root().join("docs/src/guide/simulate.md")).unwrap();
    let shown: Vec<&str> = guide
        .lines()
        .skip_while(|l| *l != "$ nightjar simulate examples/traces/week.csv --gpus 8")
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    assert!(shown.len() >= 6, "the guide shows the figures: {shown:?}");
    let run = |config: Option<&str>| {
        let mut c = Command::new(BIN);
        c.env_remove("NIGHTJAR_CONFIG").current_dir(root());
        if let Some(config) = config {
            c.args(["--config", config]);
        }
        let out = c
            .args(["simulate", "examples/traces/week.csv", "--gpus", "8"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let printed = run(None);
    assert_eq!(printed.lines().take(shown.len()).collect::<Vec<_>>(), shown);
    // The guide's comparison with the lab's config, in its own words.
    let lab = run(Some("examples/lab.toml"));
    assert!(lab.contains("(600 ran, 0 never started)"), "{lab}");
    assert!(
        lab.contains("306.57 CNY (391.03 CNY had each job started on arrival)"),
        "{lab}"
    );
    assert!(lab.contains("wait         mean 1d07h"), "{lab}");
    // The same config without max_wait: cheaper power, longer waits.
    let text = std::fs::read_to_string(root().join("examples/lab.toml")).unwrap();
    assert!(
        text.contains("\nmax_wait = \"1d\"\n"),
        "lab.toml sets max_wait"
    );
    let dir = tempfile::tempdir().unwrap();
    let unbounded = dir.path().join("lab.toml");
    std::fs::write(&unbounded, text.replace("\nmax_wait = \"1d\"\n", "\n")).unwrap();
    let patient = run(Some(unbounded.to_str().unwrap()));
    assert!(patient.contains("(600 ran, 0 never started)"), "{patient}");
    assert!(
        patient.contains("energy       374.913 kWh, 151.94 CNY"),
        "{patient}"
    );
    assert!(patient.contains("wait         mean 4d05h"), "{patient}");
    for words in [
        "costs 307 CNY of power instead of 391",
        "jobs wait 1d07h on average instead of 13 hours",
        "the power costs 152 CNY, but the average wait is 4 days",
    ] {
        assert!(
            guide.replace('\n', " ").contains(words),
            "the guide says: {words}"
        );
    }
}

#[test]
fn compare_prints_two_configs_side_by_side_each_as_its_own_run_gives_it() {
    let week = root().join("examples/traces/week.csv");
    let lab = root().join("examples/lab.toml");
    // Each side as its own run gives it, on the week's first 150 jobs (the
    // guide's table below takes the whole week).
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head.csv");
    let text = std::fs::read_to_string(&week).unwrap();
    let lines: Vec<&str> = text.lines().take(2 + 150).collect();
    std::fs::write(&head, lines.join("\n") + "\n").unwrap();
    let json = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(BIN)
            .env_remove("NIGHTJAR_CONFIG")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let os = |s: &str| std::ffi::OsStr::new(s).to_owned();
    let both = json(&[
        &os("--json"),
        &os("simulate"),
        head.as_os_str(),
        &os("--gpus"),
        &os("8"),
        &os("--compare"),
        lab.as_os_str(),
    ]);
    let alone = json(&[
        &os("--json"),
        &os("simulate"),
        head.as_os_str(),
        &os("--gpus"),
        &os("8"),
    ]);
    let lab_alone = json(&[
        &os("--config"),
        lab.as_os_str(),
        &os("--json"),
        &os("simulate"),
        head.as_os_str(),
        &os("--gpus"),
        &os("8"),
    ]);
    assert_eq!(both["a_config"], "defaults");
    assert_eq!(both["a"]["jobs"], 150, "{both}");
    assert_eq!(both["a"], alone, "A is the run under the defaults");
    assert_eq!(both["b"], lab_alone, "B is the run under lab.toml");
    // The table names both and says what changed.
    let out = Command::new(BIN)
        .env_remove("NIGHTJAR_CONFIG")
        .arg("simulate")
        .arg(&week)
        .args(["--gpus", "8", "--compare"])
        .arg(&lab)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("600 jobs\n"), "{text}");
    let guide = std::fs::read_to_string(root().join("docs/src/guide/simulate.md")).unwrap();
    let shown = guide
        .split(
            "$ nightjar simulate examples/traces/week.csv --gpus 8 --compare examples/lab.toml\n",
        )
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the guide shows a comparison");
    assert_eq!(
        text, shown,
        "the guide's comparison is what simulate prints"
    );
    assert!(text.contains("lab.toml"), "{text}");
    assert!(
        text.contains("cost CNY           224.95    306.57  +81.63"),
        "{text}"
    );
    assert!(
        text.contains("ran                   600       600  same"),
        "{text}"
    );
    // With --schedule it is refused: whose schedule would it be?
    let out = Command::new(BIN)
        .env_remove("NIGHTJAR_CONFIG")
        .arg("simulate")
        .arg(&week)
        .args(["--gpus", "8", "--schedule", "/dev/null", "--compare"])
        .arg(&lab)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn plugins_test_with_a_trace_compares_the_chain_with_and_without_the_plugin() {
    let nj = Nj::new("[plugins]\nchain = []\n");
    let work = nj.path("work");
    // One GPU: a long job first, then a long and a short one waiting.
    std::fs::write(
        work.join("t.csv"),
        "id,arrival_s,gpus,duration_s\n1,0,1,100\n2,1,1,50\n3,2,1,5\n",
    )
    .unwrap();
    std::fs::copy(
        env!("NIGHTJAR_EXAMPLE_POLICY_SHORTEST_FIRST"),
        work.join("shortest-first.wasm"),
    )
    .unwrap();
    let text = nj.ok(&[
        "plugins",
        "test",
        "shortest-first.wasm",
        "--trace",
        "t.csv",
        "--gpus",
        "1",
    ]);
    let header = text.lines().nth(1).unwrap_or_default();
    assert!(
        header.contains("the chain without shortest-first")
            && header.contains("with shortest-first.wasm"),
        "{text}"
    );
    let v = nj.json(&[
        "plugins",
        "test",
        "shortest-first.wasm",
        "--trace",
        "t.csv",
        "--gpus",
        "1",
    ]);
    // Without: job 2 runs at 100 s, job 3 after it (waits 148 s); with
    // shortest first: job 3 at 100 s (waits 98 s), job 2 at 105 s (104 s).
    assert_eq!(v["a"]["wait_s"]["max"], 148.0, "{v}");
    assert_eq!(v["b"]["wait_s"]["max"], 104.0, "{v}");
    assert_eq!(v["b"]["wait_s"]["p50"], 98.0, "{v}");
    // A file that does not load is named; one of neither input is a usage error.
    std::fs::write(work.join("junk.wasm"), b"not wasm").unwrap();
    let junk = nj.cli(&[
        "plugins",
        "test",
        "junk.wasm",
        "--trace",
        "t.csv",
        "--gpus",
        "1",
    ]);
    assert_eq!(junk.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&junk.stderr).contains("policy junk did not load"),
        "{junk:?}"
    );
    let none = nj.cli(&["plugins", "test", "shortest-first.wasm"]);
    assert_eq!(none.status.code(), Some(2));
}
