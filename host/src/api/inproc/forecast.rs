//! `nightjar estimate` (the `forecast` verb) in a daemon on simulated GPUs:
//! the forecast made now is what then happens when every run ends at its
//! estimate; a task whose runtime nobody knows makes what waits behind it
//! "unknown", with why; the tariff policy's deferral moves the forecast
//! start to the cheap window; a dry run stores nothing.

use std::collections::HashMap;

use super::World;
use crate::api::Forecast;
use crate::api::forecast::TaskForecast;
use crate::api::wire::TaskState;
use crate::daemon::testkit::T0;
use crate::store::RunClass;
use crate::task::file::{Format, parse};
use crate::task::resolve::resolve;

fn world(gpus: &str, extra: &str) -> World {
    World::new(&format!(
        "slots = 8\n[gpu]\nbackend = \"sim:{gpus}\"\nhost_mem_min_free = \"1MiB\"\n{extra}"
    ))
}

/// Every waiting task's forecast, by id.
fn forecast_all(w: &World) -> HashMap<i64, TaskForecast> {
    let report = w.call(Forecast::default()).expect("forecast");
    report
        .tasks
        .into_iter()
        .map(|t| (t.id.expect("a queued task has an id"), t))
        .collect()
}

/// Plays the world on: each run ends exactly at its start plus its
/// timeout, then a pass, until nothing runs. `timeouts` by task, ms.
fn play_out(w: &World, timeouts: &HashMap<i64, i64>) {
    for _ in 0..100 {
        let now = w.fx.daemon.now_ms();
        let ends: Vec<(i64, i64)> = timeouts
            .keys()
            .filter(|&&id| w.state(id) == TaskState::Running)
            .map(|&id| {
                let start = w.show(id).runs.last().expect("a run").started_at;
                (id, start + timeouts[&id])
            })
            .collect();
        let Some(next) = ends.iter().map(|e| e.1).min() else {
            return;
        };
        w.advance(next - now);
        for (id, end) in ends {
            if end == next {
                w.end(id, RunClass::Ok, 0);
            }
        }
        w.pass();
    }
    panic!("the world did not settle in 100 ends");
}

#[test]
fn the_forecast_is_what_happens_when_every_run_ends_at_its_estimate() {
    // Each order; then backfill with a quota of two runs, and with a stagger.
    let cases = [
        ("backfill", "", ""),
        ("first-fit", "", ""),
        ("strict", "", ""),
        ("backfill", "", "[quotas]\nrunning = 2\n"),
        ("backfill", "stagger = \"7m\"\n", ""),
    ];
    for (order, gpu, more) in cases {
        let w = world(
            "4xA100-80GB",
            &format!("{gpu}[plugins]\nchain = []\n[scheduler]\norder = \"{order}\"\n{more}"),
        );
        let order = format!("{order} {gpu}{more}");
        // (name, GPUs, timeout in minutes), submitted in this order.
        let jobs = [
            ("hold", 3, 60),
            ("wide", 4, 120),
            ("pair", 2, 30),
            ("one", 1, 20),
            ("long", 1, 300),
            ("tiny", 1, 5),
            ("three", 3, 45),
        ];
        let mut timeouts = HashMap::new();
        let mut ids = Vec::new();
        for (name, gpus, min) in jobs {
            let id = w.task(
                name,
                &["true"],
                &format!("resources = {{ gpus = {gpus}, timeout = \"{min}m\" }}"),
            );
            timeouts.insert(id, min * 60_000);
            ids.push(id);
            if name == "hold" {
                w.pass();
            }
        }
        let forecast = forecast_all(&w);
        assert_eq!(forecast.len(), ids.len() - 1, "{order}: every waiting task");
        w.pass();
        play_out(&w, &timeouts);
        for id in &ids[1..] {
            let f = &forecast[id];
            let t = w.show(*id);
            let run = t
                .runs
                .last()
                .unwrap_or_else(|| panic!("{order}: task {id} ran"));
            let gpus: Vec<u32> = (run.gpus.as_deref().unwrap_or(""))
                .split(',')
                .filter_map(|g| g.parse().ok())
                .collect();
            assert_eq!(
                (f.start, f.end, &f.gpus),
                (
                    Some(run.started_at),
                    Some(run.started_at + timeouts[id]),
                    &gpus
                ),
                "{order}: task {id} ({}) as forecast",
                f.name
            );
            assert!(f.unknown.is_none(), "{order}: {f:?}");
        }
    }
}

#[test]
fn what_waits_behind_a_run_of_unknown_length_is_unknown_and_says_why() {
    let w = world("2xA100-80GB", "[plugins]\nchain = []\n");
    // No timeout and no history: nobody knows when it ends.
    let blind = w.task("blind", &["true"], "resources = { gpus = 2 }");
    w.pass();
    assert_eq!(w.state(blind), TaskState::Running);
    let next = w.task(
        "next",
        &["true"],
        "resources = { gpus = 1, timeout = \"1h\" }",
    );
    let report = w.call(Forecast {
        ids: vec![next, blind],
        entries: Vec::new(),
        brief: false,
    });
    let report = report.expect("forecast");
    let (n, b) = (&report.tasks[0], &report.tasks[1]);
    assert_eq!((n.start, n.end), (None, None), "{n:?}");
    let why = n.unknown.as_deref().unwrap_or_default();
    assert!(
        why.contains(&format!("task {blind}")) && why.contains("timeout"),
        "names the task and what to do: {why}"
    );
    assert_eq!(b.state, "running");
    assert_eq!(b.start, Some(w.show(blind).runs[0].started_at));
    assert_eq!(b.end, None, "its runtime is not known");
    // Its runtime learnt from history, the forecast knows: after one success
    // of its name, a second `blind` task is estimated by that run.
    w.advance(600_000);
    w.end(blind, RunClass::Ok, 0);
    w.pass();
    assert_eq!(w.state(next), TaskState::Running);
    let again = w.task("blind", &["true"], "resources = { gpus = 2 }");
    let f = &w
        .call(Forecast {
            ids: vec![again],
            entries: Vec::new(),
            brief: false,
        })
        .unwrap()
        .tasks[0];
    let est = f.estimate.as_ref().expect("estimated from history");
    assert_eq!((est.ms, est.runs), (600_000, 1));
    let started = w.show(next).runs[0].started_at;
    assert_eq!(f.start, Some(started + 3_600_000), "after `next`'s timeout");
    assert_eq!(f.end, Some(started + 3_600_000 + 600_000));
}

#[test]
fn the_tariff_policy_moves_the_forecast_start_into_the_cheap_window_and_prices_it() {
    // T0 is Monday 00:00 UTC; electricity is cheap from 02:00 to 06:00.
    let w = world(
        "1xA100-80GB",
        "[plugins]\nchain = [\"offpeak-tariff\"]\n[tariff]\ncurrency = \"CNY\"\nprice = 1.0\n[[tariff.windows]]\nfrom = \"02:00\"\nto = \"06:00\"\nprice = 0.25\n",
    );
    let id = w.task(
        "train",
        &["true"],
        "resources = { gpus = 1, timeout = \"1h\" }",
    );
    let f = &w
        .call(Forecast {
            ids: vec![id],
            entries: Vec::new(),
            brief: false,
        })
        .unwrap();
    assert!(f.order.contains("offpeak-tariff"), "{}", f.order);
    let t = &f.tasks[0];
    assert_eq!(t.start, Some(T0 + 2 * 3_600_000), "{t:?}");
    assert_eq!(t.end, Some(T0 + 3 * 3_600_000));
    assert_eq!(t.gpus, vec![0]);
    // No run of its name has recorded energy: no energy, no cost, and it says so.
    assert_eq!((t.energy_kwh, t.cost), (None, None));
    w.pass();
    assert_eq!(w.state(id), TaskState::Queued, "deferred now");
    w.advance(2 * 3_600_000);
    w.pass();
    assert_eq!(w.show(id).runs[0].started_at, T0 + 2 * 3_600_000);
    // The live chain's health was not touched by the forecast's passes.
    let members = w.call(crate::api::PluginList::default()).unwrap();
    assert_eq!(members[0].failures, 0);
}

#[test]
fn a_dry_run_is_checked_as_a_submission_forecast_and_never_stored() {
    let w = world("2xA100-80GB", "[plugins]\nchain = []\n");
    let hold = w.task(
        "hold",
        &["true"],
        "resources = { gpus = 2, timeout = \"30m\" }",
    );
    w.pass();
    let entries = |toml: &str| {
        let defs = parse(toml, Format::Toml).expect("parses");
        resolve(&defs, w.fx.dir(), "t").expect("resolves")
    };
    let before = w.call(crate::api::TaskList::default()).unwrap().len();
    let report = w
        .call(Forecast {
            ids: Vec::new(),
            entries: entries(
                "[[task]]\nname = \"try\"\ncommand = [\"true\"]\nresources = { gpus = 1, timeout = \"10m\" }\n[[task]]\nname = \"later\"\ncommand = [\"true\"]\nhold = true\n",
            ),
            brief: false,
        })
        .expect("forecast");
    let started = w.show(hold).runs[0].started_at;
    let t = &report.tasks[0];
    assert_eq!((t.id, t.name.as_str()), (None, "try"));
    assert_eq!(t.start, Some(started + 1_800_000));
    assert_eq!(t.end, Some(started + 1_800_000 + 600_000));
    let held = &report.tasks[1];
    assert!(
        held.unknown.as_deref().unwrap_or_default().contains("held"),
        "{held:?}"
    );
    assert_eq!(
        w.call(crate::api::TaskList::default()).unwrap().len(),
        before,
        "nothing stored"
    );
    // Checked as a submission is: a task this machine can never hold is refused.
    let refused = w.call(Forecast {
        ids: Vec::new(),
        entries: entries(
            "[[task]]\nname = \"huge\"\ncommand = [\"true\"]\nresources = { gpus = 9 }\n",
        ),
        brief: false,
    });
    let e = refused.expect_err("refused");
    assert!(e.to_string().contains("9"), "{e}");
}
