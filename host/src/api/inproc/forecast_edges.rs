//! `nightjar estimate` asked odd things: a sweep's id (its members), the
//! same id twice, a dry run of a sweep (its members start in order) or of
//! tasks that would not wait in the queue (only they are answered), and a
//! run whose timeout is longer than any forecast can plan past.

use super::World;
use crate::api::Forecast;
use crate::api::forecast::ForecastReport;
use crate::api::wire::TaskState;
use crate::task::file::{Format, parse};
use crate::task::resolve::resolve;

/// One simulated GPU, the built-in order.
fn world() -> World {
    World::new(
        "slots = 8\n[gpu]\nbackend = \"sim:1xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n[plugins]\nchain = []\n",
    )
}

fn forecast(w: &World, ids: Vec<i64>, toml: Option<&str>) -> ForecastReport {
    let entries = toml.map_or_else(Vec::new, |t| {
        let defs = parse(t, Format::Toml).expect("parses");
        resolve(&defs, w.fx.dir(), "t").expect("resolves")
    });
    w.call(Forecast {
        ids,
        entries,
        brief: false,
    })
    .expect("forecast")
}

const SWEEP: &str = "[[task]]\nname = \"sw\"\ncommand = [\"true\"]\nresources = { gpus = 1, timeout = \"10m\" }\n[task.sweep]\nlr = [1, 2, 3]\n";

#[test]
fn a_sweeps_id_stands_for_its_members_and_an_id_asked_twice_is_one_row() {
    let w = world();
    let ids = w.submit(SWEEP);
    let sweep = ids[0];
    let members: Vec<i64> = w.show(sweep).members.iter().map(|m| m.id).collect();
    assert_eq!(members.len(), 3);
    // The first runs: its row says so (read as `show` reads it).
    w.pass();
    assert_eq!(w.state(members[0]), TaskState::Running);
    let r = forecast(&w, vec![sweep, sweep, members[1]], None);
    assert_eq!(r.tasks[0].state, "running", "{r:?}");
    let rows: Vec<Option<i64>> = r.tasks.iter().map(|t| t.id).collect();
    assert_eq!(
        rows,
        members.iter().map(|&m| Some(m)).collect::<Vec<_>>(),
        "{r:?}"
    );
    let starts: Vec<i64> = r.tasks.iter().map(|t| t.start.expect("known")).collect();
    assert_eq!(
        starts[1] - starts[0],
        600_000,
        "one after another: {starts:?}"
    );
    assert_eq!(starts[2] - starts[1], 600_000, "{starts:?}");
}

#[test]
fn a_dry_run_sweeps_members_start_in_the_order_a_submit_would_start_them() {
    let w = world();
    let r = forecast(&w, Vec::new(), Some(SWEEP));
    let named: Vec<(&str, i64)> = r
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.start.expect("known")))
        .collect();
    assert_eq!(named.len(), 3, "{named:?}");
    assert!(
        named[0].1 < named[1].1 && named[1].1 < named[2].1,
        "sw[lr=1] first, as submit would: {named:?}"
    );
    // And as it then happens.
    let ids = w.submit(SWEEP);
    w.pass();
    let first = w.show(ids[0]).members[0].id;
    assert_eq!(w.state(first), TaskState::Running);
}

#[test]
fn a_dry_run_that_would_not_wait_in_the_queue_answers_only_for_itself() {
    let w = world();
    w.task(
        "queued",
        &["true"],
        "resources = { gpus = 1, timeout = \"1h\" }",
    );
    let r = forecast(
        &w,
        Vec::new(),
        Some("[[task]]\nname = \"later\"\ncommand = [\"true\"]\nhold = true\n"),
    );
    let names: Vec<&str> = r.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["later"], "not the whole queue: {r:?}");
}

#[test]
fn what_waits_behind_a_run_longer_than_any_forecast_names_it() {
    let w = world();
    // A timeout of a billion years is a runtime no forecast plans past.
    let long = w.task(
        "long",
        &["true"],
        "resources = { gpus = 1, timeout = \"1000000000y\" }",
    );
    w.pass();
    assert_eq!(w.state(long), TaskState::Running);
    let next = w.task(
        "next",
        &["true"],
        "resources = { gpus = 1, timeout = \"1h\" }",
    );
    let r = forecast(&w, vec![next], None);
    let why = r.tasks[0].unknown.as_deref().unwrap_or_default();
    assert!(why.contains(&format!("task {long}")), "{why}");
}

#[test]
fn a_task_in_a_retrys_backoff_keeps_its_place_by_submit_time() {
    let w = world();
    let flaky = w.task(
        "flaky",
        &["fetch"],
        "resources = { gpus = 1, timeout = \"10m\" }\n[task.retry]\nmax_attempts = 2\nbackoff = \"5m\"\non = [\"network\"]\n",
    );
    w.pass();
    w.advance(60_000);
    w.end(flaky, crate::store::RunClass::Network, 1);
    // Back in the queue, its second attempt 5 minutes away; a task
    // submitted after it, and one that holds the GPU for an hour.
    let hold = w.task(
        "hold",
        &["true"],
        "resources = { gpus = 1, timeout = \"1h\" }",
    );
    w.pass();
    assert_eq!(w.state(hold), TaskState::Running);
    w.advance(60_000);
    let later = w.task(
        "later",
        &["true"],
        "resources = { gpus = 1, timeout = \"10m\" }",
    );
    let r = forecast(&w, vec![flaky, later], None);
    let (f, l) = (r.tasks[0].start, r.tasks[1].start);
    // The daemon orders by submit time: the retry goes first when the GPU frees.
    w.advance(3_600_000);
    w.end(hold, crate::store::RunClass::Ok, 0);
    w.pass();
    assert_eq!(w.state(flaky), TaskState::Running, "the retry first");
    assert_eq!(w.state(later), TaskState::Queued);
    assert!(f < l, "forecast: flaky {f:?}, later {l:?}");
}

#[test]
fn a_dry_runs_dependencies_are_checked_and_met_ones_wait_for_nothing() {
    let w = world();
    let ok = w.task(
        "ok",
        &["true"],
        "resources = { gpus = 1, timeout = \"10m\" }",
    );
    let bad = w.task(
        "bad",
        &["false"],
        "resources = { gpus = 1, timeout = \"10m\" }",
    );
    w.pass();
    w.advance(60_000);
    w.end(ok, crate::store::RunClass::Ok, 0);
    w.pass();
    w.advance(60_000);
    w.end(bad, crate::store::RunClass::AppError, 1);
    assert_eq!(w.state(bad), TaskState::Failed);
    let after = |target: i64| {
        let toml = format!(
            "[[task]]\nname = \"next\"\ncommand = [\"true\"]\nafter = [{target}]\nresources = {{ gpus = 1, timeout = \"10m\" }}\n"
        );
        let defs = parse(&toml, Format::Toml).expect("parses");
        let entries = resolve(&defs, w.fx.dir(), "t").expect("resolves");
        w.call(Forecast {
            ids: Vec::new(),
            entries,
            brief: false,
        })
    };
    // As submit refuses it.
    let e = after(99_999).expect_err("no such task");
    assert!(e.to_string().contains("unknown dependency"), "{e}");
    // Its dependency already succeeded: it would wait for nothing.
    let r = after(ok).expect("forecast");
    assert_eq!(r.tasks[0].start, Some(w.fx.daemon.now_ms()), "{r:?}");
    // Its dependency failed: it would be blocked, as submit blocks it.
    let r = after(bad).expect("forecast");
    let why = r.tasks[0].unknown.as_deref().unwrap_or_default();
    assert!(
        why.contains("blocked") && why.contains(&bad.to_string()),
        "{why}"
    );
}

#[test]
fn a_forecast_that_runs_out_of_time_says_so_for_what_it_did_not_reach() {
    let w = world();
    let a = w.task("a", &["true"], "resources = { gpus = 1, timeout = \"1h\" }");
    let b = w.task("b", &["true"], "resources = { gpus = 1, timeout = \"1h\" }");
    // A ten-thousand-member sweep through the chain took minutes (a dry run
    // held the daemon's forecast for over six); each forecast has a limit.
    let r =
        w.fx.daemon
            .forecast(&[a, b], Vec::new(), false, std::time::Duration::ZERO)
            .expect("forecast");
    for t in &r.tasks {
        assert_eq!(t.start, None, "{t:?}");
        let why = t.unknown.as_deref().unwrap_or_default();
        assert!(why.contains("time limit"), "{why}");
    }
    let r =
        w.fx.daemon
            .forecast(
                &[a, b],
                Vec::new(),
                false,
                crate::daemon::Daemon::FORECAST_LIMIT,
            )
            .expect("forecast");
    assert!(r.tasks.iter().all(|t| t.start.is_some()), "{r:?}");
}
