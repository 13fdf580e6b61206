//! EASY backfill and runtime estimates on simulated GPUs: the first job
//! that does not fit reserves its start, only work expected to end before
//! it is backfilled, and a task's estimate is its timeout or the median of
//! its name's successful runs. (Staggered starts across a restart are the
//! end-to-end tier's: `tests/e2e/backfill.rs`.)

use super::World;
use crate::api::estimate::EstimateSource;
use crate::api::wire::TaskState;
use crate::api::{Show, Why};
use crate::store::RunClass;

fn world(gpus: &str) -> World {
    world_with(gpus, "")
}

/// As [`world`], with `extra` (whole tables) at the end of the config.
fn world_with(gpus: &str, extra: &str) -> World {
    World::new(&format!(
        "slots = 8\n[plugins]\nchain = []\n[gpu]\nbackend = \"sim:{gpus}\"\nhost_mem_min_free = \"1MiB\"\n{extra}"
    ))
}

#[test]
fn a_big_job_reserves_its_start_and_only_short_work_backfills_before_it() {
    let w = world("4xA100-80GB");
    // Holds GPUs 0-1, expected (its timeout) to 30 s.
    let hold = w.task(
        "hold",
        &["sleep", "4"],
        "resources = { gpus = 2, timeout = \"30s\" }",
    );
    w.pass();
    assert_eq!(w.state(hold), TaskState::Running);
    let hold_run = w.run(hold);
    w.advance(500);
    let big = w.task("big", &["true"], "resources = { gpus = 4 }");
    // Would still run at the big job's reserved start: waits.
    let long = w.task(
        "long",
        &["sleep", "1"],
        "resources = { gpus = 1, timeout = \"60s\" }",
    );
    // Ends (by its timeout) well before it: backfilled now.
    let short = w.task(
        "short",
        &["sleep", "1"],
        "resources = { gpus = 1, timeout = \"5s\" }",
    );
    w.pass();
    assert_eq!(w.state(short), TaskState::Running, "backfilled");
    assert_eq!(w.state(big), TaskState::Queued);
    assert_eq!(w.state(long), TaskState::Queued);
    let why_big = w.call(Why { id: big }).unwrap().reason.unwrap_or_default();
    assert!(
        why_big.contains("waiting for 4 GPUs; expected to start at")
            && why_big.contains(&format!("when run {hold_run} ends (backfill reservation)")),
        "{why_big}"
    );
    let because = w
        .call(Why { id: short })
        .unwrap()
        .run
        .map(|r| r.because)
        .unwrap_or_default();
    assert!(
        because.contains("backfilled: expected to end by")
            && because.contains(&format!("before task {big}'s reserved start")),
        "{because}"
    );
    let reason = w.reason(long);
    assert!(
        reason.starts_with(&format!("backfill: task {big} is reserved to start at")),
        "{reason}"
    );
    let estimate = w.show(short).estimate.expect("an estimate");
    assert_eq!(
        (estimate.ms, estimate.source),
        (5_000, EstimateSource::Timeout)
    );

    // The short job ends, then the holder: the big job starts before the long one.
    w.advance(1_000);
    w.end(short, RunClass::Ok, 0);
    w.pass();
    assert_eq!(
        w.state(long),
        TaskState::Queued,
        "never ahead of the big job"
    );
    w.advance(2_500);
    w.end(hold, RunClass::Ok, 0);
    w.pass();
    assert_eq!(w.state(big), TaskState::Running, "the big job had the GPUs");
    assert_eq!(w.state(long), TaskState::Queued);
    w.advance(100);
    w.end(big, RunClass::Ok, 0);
    w.pass();
    assert_eq!(w.state(long), TaskState::Running);
}

#[test]
fn a_tasks_estimate_is_the_median_of_its_names_successful_runs() {
    let w = world("1xA100-80GB");
    for ran_ms in [4_000, 1_000, 9_000] {
        let t = w.task("prep", &["true"], "");
        w.pass();
        w.advance(ran_ms);
        w.end(t, RunClass::Ok, 0);
    }
    let failing = w.task("prep", &["false"], "");
    w.pass();
    w.advance(60_000);
    w.end(failing, RunClass::AppError, 1);
    let t = w.task("prep", &["true"], "hold = true");
    let e = w
        .call(Show { id: t })
        .unwrap()
        .estimate
        .expect("an estimate");
    assert_eq!(
        (e.source, e.runs, e.ms),
        (EstimateSource::History, 3, 4_000),
        "the median of the three that succeeded; the failed run is not counted"
    );
    let other = w.task("fresh", &["true"], "hold = true");
    assert_eq!(w.show(other).estimate, None, "no history, no timeout");
}

#[test]
fn a_cached_estimate_moves_with_each_success_and_keeps_only_the_newest_runs() {
    // Two runs make an estimate here; the history is read once, then each
    // success is added to it (the newest first) and the oldest dropped.
    let w = world_with("1xA100-80GB", "[scheduler]\nestimate_runs = 2\n");
    let probe = w.task("prep", &["true"], "hold = true");
    let mut seen = Vec::new();
    for ran_ms in [4_000, 1_000, 9_000, 7_000] {
        let t = w.task("prep", &["true"], "");
        w.pass();
        w.advance(ran_ms);
        w.end(t, RunClass::Ok, 0);
        let e = w.show(probe).estimate.expect("an estimate after a success");
        seen.push((e.runs, e.ms));
    }
    assert_eq!(
        seen,
        vec![(1, 4_000), (2, 2_500), (2, 5_000), (2, 8_000)],
        "the median of the newest two successes after each end"
    );
}

#[test]
fn an_end_reported_again_is_not_counted_again_in_the_names_history() {
    // A retried report (or a SLURM poll) meets an end already recorded.
    let w = world_with("1xA100-80GB", "[scheduler]\nestimate_runs = 3\n");
    let probe = w.task("prep", &["true"], "hold = true");
    let mut last = 0;
    for ran_ms in [1_000, 9_000] {
        last = w.task("prep", &["true"], "");
        w.pass();
        w.advance(ran_ms);
        w.end(last, RunClass::Ok, 0);
    }
    let run = w.run(last);
    let again =
        crate::store::tests::outcome(RunClass::Ok, 0, crate::daemon::Clock::now_ms(&*w.fx.clock));
    assert!(
        w.fx.daemon.report_end(run, &again),
        "the end stays recorded"
    );
    let e = w.show(probe).estimate.expect("an estimate");
    assert_eq!((e.runs, e.ms), (2, 5_000), "two runs, each once");
}

#[test]
fn a_history_keeps_the_stores_order_when_ends_are_recorded_out_of_order() {
    // Three runs start together; the one that ended first is recorded last
    // (its validators ran long, or its report was retried): the newest two
    // by their ends make the estimate, as a fresh read of the store would.
    let w = world_with("3xA100-80GB", "[scheduler]\nestimate_runs = 2\n");
    let probe = w.task("prep", &["true"], "hold = true");
    let ids: Vec<i64> = (0..3).map(|_| w.task("prep", &["true"], "")).collect();
    w.pass();
    let start = crate::daemon::Clock::now_ms(&*w.fx.clock);
    let runs: Vec<i64> = ids.iter().map(|&id| w.run(id)).collect();
    let end = |run: i64, ms: i64| {
        let out = crate::store::tests::outcome(RunClass::Ok, 0, start + ms);
        assert!(w.fx.daemon.report_end(run, &out));
    };
    end(runs[0], 5_000);
    end(runs[1], 9_000);
    end(runs[2], 1_000);
    let e = w.show(probe).estimate.expect("an estimate");
    assert_eq!(
        (e.runs, e.ms),
        (2, 7_000),
        "the 9 s and 5 s runs, not the 1 s one"
    );
}

#[test]
fn the_three_orders_in_the_daemon_strict_first_fit_and_the_old_backfill_key() {
    // GPUs 0-1 held; a 4-GPU job does not fit; a short 1-GPU job behind it.
    let scene = |order: &str| {
        let w = world_with("4xA100-80GB", &format!("[scheduler]\n{order}\n"));
        let hold = w.task(
            "hold",
            &["sleep", "4"],
            "resources = { gpus = 2, timeout = \"30s\" }",
        );
        w.pass();
        assert_eq!(w.state(hold), TaskState::Running);
        w.advance(500);
        let big = w.task("big", &["true"], "resources = { gpus = 4 }");
        let short = w.task(
            "short",
            &["true"],
            "resources = { gpus = 1, timeout = \"5s\" }",
        );
        // Two GPUs free: both could run now.
        let long = w.task(
            "long",
            &["true"],
            "resources = { gpus = 1, timeout = \"60s\" }",
        );
        w.pass();
        (w.state(big), w.state(short), w.state(long))
    };
    use TaskState::{Queued, Running};
    // Strict: nothing passes the head. Backfill: only short, which ends
    // before the head's reserved start. First fit (and the old `backfill =
    // false`): both start in the head's place.
    assert_eq!(scene("order = \"strict\""), (Queued, Queued, Queued));
    assert_eq!(scene("order = \"backfill\""), (Queued, Running, Queued));
    assert_eq!(scene("order = \"first-fit\""), (Queued, Running, Running));
    assert_eq!(scene("backfill = false"), (Queued, Running, Running));
}
