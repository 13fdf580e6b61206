//! Staggered starts and EASY backfill in a real daemon on simulated GPUs:
//! orders and gaps are read from the runs' recorded start times, never from
//! how long the test took.

use serde_json::Value;

use crate::harness::Nj;

fn world(gpus: &str, extra: &str) -> Nj {
    let mut nj = Nj::new(&format!(
        "slots = 8\n[plugins]\nchain = []\n[gpu]\nbackend = \"sim:{gpus}\"\nsample_period = \"100ms\"\nhost_mem_min_free = \"1MiB\"\n{extra}"
    ));
    nj.start();
    nj
}

/// The first run's `started_at` (Unix ms), once it has one.
fn started(nj: &Nj, id: i64) -> Option<i64> {
    nj.show(id)["runs"][0]["started_at"].as_i64()
}

fn state(nj: &Nj, id: i64) -> String {
    nj.show(id)["task"]["state"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn why(nj: &Nj, id: i64) -> String {
    nj.ok(&["why", &id.to_string()])
}

#[test]
fn runs_on_one_gpu_start_a_stagger_apart_and_a_restart_keeps_the_stagger() {
    let mut nj = world("1xA100-80GB", "share = true\nstagger = \"3s\"\n");
    let one = ["--gpus", "1", "--gpu-mem", "1GiB", "--", "sleep", "60"];
    let a = nj.submit(&one);
    let b = nj.submit(&one);
    nj.until_slow("the first to start", || started(&nj, a).is_some());
    nj.until("the second to say it is staggered", || {
        why(&nj, b).contains(&format!("staggered: GPU 0 started task {a}"))
    });
    let reason = nj.show(b)["task"]["reason"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        reason.starts_with(&format!("staggered: GPU 0 started task {a} ")),
        "{reason}"
    );
    let c = nj.submit(&one);
    nj.until_slow("all three to start", || started(&nj, c).is_some());
    let mut at: Vec<i64> = [a, b, c]
        .iter()
        .map(|&t| started(&nj, t).unwrap())
        .collect();
    at.sort_unstable();
    assert!(
        at[1] - at[0] >= 3_000 && at[2] - at[1] >= 3_000,
        "starts {at:?}"
    );
    // A restart right after a start still waits out the stagger: the last
    // start is read back from the store.
    nj.term();
    nj.start();
    let d = nj.submit(&one);
    nj.until_slow("the fourth to start", || started(&nj, d).is_some());
    let gap = started(&nj, d).unwrap() - at[2];
    assert!(
        gap >= 3_000,
        "started {gap} ms after the last start before the restart"
    );
}

/// Submits `args` under `name` and returns the id.
fn submit_named(nj: &Nj, name: &str, args: &[&str]) -> i64 {
    let mut a = vec!["--name", name];
    a.extend_from_slice(args);
    nj.submit(&a)
}

fn run(nj: &Nj, id: i64) -> Value {
    nj.show(id)["runs"][0].clone()
}

#[test]
fn a_big_job_reserves_its_start_and_only_short_work_backfills_before_it() {
    let nj = world("4xA100-80GB", "");
    // Holds GPUs 0-1 for 4 s, expected (its timeout) to 30 s.
    let a = submit_named(
        &nj,
        "hold",
        &["--gpus", "2", "--timeout", "30s", "--", "sleep", "4"],
    );
    nj.until_slow("the first job to start", || started(&nj, a).is_some());
    let big = submit_named(&nj, "big", &["--gpus", "4", "--", "true"]);
    // Would still run at the big job's reserved start: waits.
    let long = submit_named(
        &nj,
        "long",
        &["--gpus", "1", "--timeout", "60s", "--", "sleep", "1"],
    );
    // Ends (by its timeout) well before it: backfilled now.
    let short = submit_named(
        &nj,
        "short",
        &["--gpus", "1", "--timeout", "5s", "--", "sleep", "1"],
    );
    nj.until("the short job to be backfilled", || {
        started(&nj, short).is_some()
    });
    let w = why(&nj, big);
    assert!(
        w.contains("waiting for 4 GPUs; expected to start at")
            && w.contains(&format!(
                "when run {} ends (backfill reservation)",
                run(&nj, a)["id"]
            )),
        "{w}"
    );
    let w = why(&nj, short);
    assert!(
        w.contains("backfilled: expected to end by")
            && w.contains(&format!("before task {big}'s reserved start")),
        "{w}"
    );
    assert_eq!(state(&nj, long), "queued");
    let reason = nj.show(long)["task"]["reason"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        reason.starts_with(&format!("backfill: task {big} is reserved to start at")),
        "{reason}"
    );
    assert!(
        nj.ok(&["show", &short.to_string()])
            .contains("estimated  5.0s (timeout)")
    );
    for t in [a, big, long, short] {
        nj.wait(t);
    }
    let (ra, rbig, rlong, rshort) = (run(&nj, a), run(&nj, big), run(&nj, long), run(&nj, short));
    let at = |r: &Value, k: &str| r[k].as_i64().unwrap();
    assert!(
        at(&rshort, "started_at") < at(&rbig, "started_at"),
        "the short job went first"
    );
    assert!(
        at(&rbig, "started_at") >= at(&ra, "finished_at"),
        "the big job waited for the GPUs"
    );
    assert!(
        at(&rlong, "started_at") >= at(&rbig, "started_at"),
        "the long job never started ahead of the big one"
    );
}

#[test]
fn a_tasks_estimate_is_the_median_of_its_names_successful_runs() {
    let nj = world("1xA100-80GB", "");
    for _ in 0..3 {
        let t = submit_named(&nj, "prep", &["--", "true"]);
        assert_eq!(nj.wait(t), 0);
    }
    let failing = submit_named(&nj, "prep", &["--", "false"]);
    nj.wait(failing);
    let t = submit_named(&nj, "prep", &["--hold", "--", "true"]);
    let e = &nj.show(t)["estimate"];
    assert_eq!(e["source"], "history", "{e}");
    assert_eq!(e["runs"], 3, "the failed run is not counted: {e}");
    assert!(
        nj.ok(&["show", &t.to_string()])
            .contains("(median of 3 runs)")
    );
    let other = nj.submit(&["--name", "fresh", "--hold", "--", "true"]);
    assert!(nj.show(other).get("estimate").is_none_or(Value::is_null));
}
