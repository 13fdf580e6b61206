//! Staggered starts in a real daemon on simulated GPUs, across a restart:
//! gaps are read from the runs' recorded start times, never from how long
//! the test took. (EASY backfill and estimates are the in-process tier's:
//! `host/src/api/inproc/backfill.rs`.)

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
