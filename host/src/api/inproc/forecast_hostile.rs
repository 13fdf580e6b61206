//! `nightjar estimate` against a hostile policy chain: a policy that asks
//! to be asked again at once, for ever, while a run holds GPUs for a long
//! time (or a time nobody knows), must not keep a forecast playing for
//! ever: it ends, and the task it defers is "unknown", with why.

use std::time::{Duration, Instant};

use super::{HOSTILE, World};
use crate::api::Forecast;
use crate::api::wire::TaskState;

/// `gpus` simulated GPUs; the hostile plugin, in `mode`, is the whole chain.
fn world(mode: &str, gpus: u32) -> World {
    World::with_plugins(
        &[("hostile", HOSTILE)],
        &format!(
            "slots = 8\n[gpu]\nbackend = \"sim:{gpus}xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n[plugins]\nchain = [\"hostile\"]\nevaluate_timeout = \"1s\"\n[plugin.hostile]\non_failure = \"open\"\n[plugin.hostile.config]\nmode = \"{mode}\"\n"
        ),
    )
}

/// A forecast of `ids` whose wall-clock limit (30 s through the API) is
/// set ten minutes off: what must end these forecasts is the wake-up
/// budget and the stall rule, which count passes, not time, so a loaded
/// machine does not change what they say (they once hit the API's limit
/// on a busy CI machine). The API's limit is pinned in `forecast_edges`.
fn forecast_of(w: &World, ids: Vec<i64>) -> crate::api::forecast::ForecastReport {
    let every = ids.is_empty();
    w.fx.daemon
        .forecast(&ids, Vec::new(), every, Duration::from_secs(600))
        .expect("forecast")
}

#[test]
fn a_policy_that_defers_at_once_for_ever_behind_a_long_run_ends_and_says_unknown() {
    // `until-now` defers every task but project `free`'s, asking to be asked
    // again at once: the daemon asks again after `min_pass_interval` (1 s).
    for timeout in ["", ", timeout = \"36500d\""] {
        let w = world("until-now", 2);
        let long = w.task(
            "long",
            &["true"],
            &format!("project = \"free\"\nresources = {{ gpus = 1{timeout} }}"),
        );
        w.pass();
        assert_eq!(w.state(long), TaskState::Running);
        let deferred = w.task(
            "deferred",
            &["true"],
            "resources = { gpus = 1, timeout = \"1h\" }",
        );
        for ids in [vec![deferred], Vec::new()] {
            let report = forecast_of(&w, ids);
            let t = report
                .tasks
                .iter()
                .find(|t| t.id == Some(deferred))
                .expect("its row");
            assert_eq!((t.start, t.end), (None, None), "{timeout}: {t:?}");
            let why = t.unknown.as_deref().unwrap_or_default();
            assert!(why.contains("polic"), "{timeout}: says why: {why}");
        }
    }
}

#[test]
fn the_wake_ups_a_forecast_follows_are_capped_in_all_however_many_runs_end() {
    let w = world("until-now", 3);
    // Five day-long runs one after another on two of the three GPUs; while
    // each runs, the policy asks to be asked again each second, for ever,
    // about the task that would fit on the third.
    for _ in 0..5 {
        w.task(
            "day",
            &["true"],
            "project = \"free\"\nresources = { gpus = 2, timeout = \"1d\" }",
        );
    }
    let deferred = w.task(
        "deferred",
        &["true"],
        "resources = { gpus = 1, timeout = \"1h\" }",
    );
    let report = forecast_of(&w, vec![deferred]);
    assert!(
        report.chain_passes <= 10_100,
        "chain passes: {}",
        report.chain_passes
    );
    let why = report.tasks[0].unknown.as_deref().unwrap_or_default();
    assert!(why.contains("polic"), "{why}");
}

#[test]
fn a_caller_that_goes_away_keeps_its_turn_until_its_forecast_ends() {
    // A forecast that takes a while: the policy asks again each second.
    let w = world("until-now", 2);
    w.task(
        "long",
        &["true"],
        "project = \"free\"\nresources = { gpus = 1 }",
    );
    w.pass();
    w.task(
        "deferred",
        &["true"],
        "resources = { gpus = 1, timeout = \"1h\" }",
    );
    // An HTTP client that hangs up drops the call's future; the forecast
    // goes on in its thread, and must hold the turn till it ends (else a
    // caller hanging up at once, again and again, runs as many at once).
    let call = w.fx.rt().block_on(async {
        let f = w.api.call(&w.me, Forecast::default());
        tokio::time::timeout(Duration::from_millis(100), f).await
    });
    assert!(call.is_err(), "the forecast is still playing after 100 ms");
    assert!(w.fx.daemon.forecast_busy(), "its turn outlives its caller");
    let began = Instant::now();
    while w.fx.daemon.forecast_busy() {
        assert!(began.elapsed() < Duration::from_secs(120), "it ends");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_brief_forecast_waits_a_moment_for_its_turn_then_gives_up() {
    let w = world("until-now", 2);
    w.task("t", &["true"], "resources = { gpus = 1, timeout = \"1h\" }");
    let turn = w.fx.rt().block_on(w.fx.daemon.forecast_turn());
    let began = Instant::now();
    let e = w
        .call(Forecast {
            brief: true,
            ..Forecast::default()
        })
        .expect_err("another forecast holds the turn");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    assert!(e.to_string().contains("busy"), "{e}");
    drop(turn);
    let r = w.call(Forecast {
        brief: true,
        ..Forecast::default()
    });
    assert_eq!(r.expect("its turn now").tasks.len(), 1);
}

#[test]
fn a_task_held_by_a_failing_closed_policy_is_not_blamed_on_a_task_that_never_starts() {
    let w = World::with_plugins(
        &[("hostile", HOSTILE)],
        "slots = 8\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n[plugins]\nchain = [\"hostile\"]\n[plugin.hostile]\non_failure = \"closed\"\n[plugin.hostile.config]\nmode = \"panic\"\n",
    );
    let timed = w.task(
        "timed",
        &["true"],
        "resources = { gpus = 1, timeout = \"1h\" }",
    );
    // No timeout, no history: its end is not known, but it never starts either.
    let blind = w.task("blind", &["true"], "resources = { gpus = 1 }");
    let r = forecast_of(&w, vec![timed]);
    let why = r.tasks[0].unknown.as_deref().unwrap_or_default();
    assert!(!why.contains(&format!("task {blind}")), "{why}");
    assert!(why.contains("polic"), "{why}");
}

/// Tasks' starts in `w`'s forecast of every waiting task, ms after now.
fn starts(w: &World) -> Vec<(Option<i64>, Option<i64>)> {
    let r = w.call(Forecast::default()).expect("forecast");
    r.tasks
        .iter()
        .map(|t| (t.id, t.start.map(|s| s - r.now)))
        .collect()
}

/// A policy that fails every second call, `closed` (nothing starts while
/// it fails), and six one-GPU tasks for two GPUs.
fn flaky_closed() -> World {
    let w = World::with_plugins(
        &[("hostile", HOSTILE)],
        "slots = 8\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n[plugins]\nchain = [\"hostile\"]\n[plugin.hostile]\non_failure = \"closed\"\n[plugin.hostile.config]\nmode = \"flaky\"\n",
    );
    for i in 0..6 {
        w.task(
            &format!("t{i}"),
            &["true"],
            "resources = { gpus = 1, timeout = \"1h\" }",
        );
    }
    w
}

#[test]
fn a_forecast_counts_no_failures_of_an_earlier_one_and_disables_what_the_scheduler_did() {
    // The forecast's copy of the chain once kept the failures each forecast
    // counted: the policy, disabled in the first, failed (closed) every
    // later forecast until its file changed, while the scheduler asked it.
    let w = flaky_closed();
    let first = starts(&w);
    assert!(first.iter().all(|(_, s)| s.is_some()), "{first:?}");
    assert_eq!(starts(&w), first, "the same forecast asked again");
    // Once the scheduler has disabled it (closed: nothing starts), so has
    // a forecast, though none had counted its failures.
    let w = flaky_closed();
    for _ in 0..8 {
        w.pass();
    }
    let views = w.fx.daemon.plugin_views();
    assert_eq!(views[0].state, "disabled", "{views:?}");
    let after = starts(&w);
    assert!(
        !after.is_empty() && after.iter().all(|(_, s)| s.is_none()),
        "{after:?}"
    );
}
