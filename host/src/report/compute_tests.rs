//! The accounting of a real store, built through the store's own API, with
//! every expected value worked out by hand from the times below.
//!
//! Day D is Monday 2024-01-01 (UTC). Tariff: 1.0 EUR/kWh, 17:00-23:00 peak
//! at 3.0, 23:00-07:00 cheap at 0.2. Period: D to D + 2 days; now D + 40h.
//!
//! | task        | project | runs                                              |
//! |-------------|---------|---------------------------------------------------|
//! | A train     | alpha   | submit 20h (peak), run 23h-25h, 2 GPUs, 2 kWh, stored 0.4, ok |
//! | B eval      | alpha   | submit 16:30, run 16:30-17:30 (crosses 17:00), 0.01 kWh estimate, no cost, app-error |
//! | C train     | beta    | submit 1h; run 2h-3h network (1 kWh, stored 0.2); retry ready 3h+10s, run 5h-6h ok, no energy |
//! | H old       | beta    | ran D-4h to D-3h: before the period               |
//! | I cancelled | beta    | submit 12h, cancelled 13h, never ran              |
//! | F queued    | beta    | submit 30h, still waiting                         |
//! | G running   | beta    | submit 35h, started 36h, still running            |

use std::collections::BTreeMap;

use super::*;
use crate::gpu::energy::RunEnergy;
use crate::gpu::monitor::SeriesPoint;
use crate::store::{NewRun, RunClass, RunOutcome, Store};
use crate::tariff::{Tariff, Window};
use crate::task::file::{Format, parse};
use crate::task::resolve::resolve;

pub(super) const D: i64 = 1_704_067_200_000;
pub(super) const H: i64 = 3_600_000;
const M: i64 = 60_000;

pub(super) fn tariff() -> Tariff {
    let w = |from: u32, to: u32, price: f64| Window {
        from_s: from * 3600,
        to_s: to * 3600,
        price,
        days: [true; 7],
        label: format!("{from}-{to}"),
    };
    Tariff::new(
        "EUR".into(),
        1.0,
        vec![w(17, 23, 3.0), w(23, 7, 0.2)],
        chrono_tz::UTC,
    )
    .unwrap()
}

pub(super) struct World {
    dir: tempfile::TempDir,
    pub(super) s: Store,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("nj.db")).unwrap();
        World { dir, s }
    }

    fn task(&mut self, name: &str, project: &str, at: i64, attempts: u32) -> i64 {
        let toml = format!(
            "name = \"{name}\"\nproject = \"{project}\"\ncommand = \"x\"\n[retry]\nmax_attempts = {attempts}\n"
        );
        let entries = resolve(
            &parse(&toml, Format::Toml).unwrap(),
            &std::env::temp_dir(),
            "t",
        )
        .unwrap();
        self.s.submit(&entries, at, |_| None).unwrap()[0]
    }

    fn start(&mut self, task: i64, at: i64, gpus: &str) -> i64 {
        let run = NewRun {
            gpus: (!gpus.is_empty()).then(|| gpus.to_string()),
            ..NewRun::default()
        };
        self.s
            .claim(task, &run, self.dir.path(), at)
            .unwrap()
            .unwrap()
            .id
    }

    fn end(
        &mut self,
        run: i64,
        at: i64,
        class: RunClass,
        energy: Option<(f64, &str, Option<f64>)>,
    ) {
        let out = RunOutcome {
            class,
            exit_code: Some(0),
            signal: None,
            finished_at: at,
            message: None,
        };
        self.s.finish_run(run, &out).unwrap();
        if let Some((j, source, cost)) = energy {
            let e = RunEnergy {
                energy_j: j,
                source: source.into(),
                cost,
                currency: cost.map(|_| "EUR".into()),
            };
            self.s.record_run_energy(run, &e).unwrap();
        }
    }
}

/// The world of the table above; returns (A, C) task ids.
pub(super) fn world() -> (World, i64, i64) {
    let mut w = World::new();
    let h = w.task("old", "beta", D - 5 * H, 1);
    let r = w.start(h, D - 4 * H, "0");
    w.end(
        r,
        D - 3 * H,
        RunClass::Ok,
        Some((1e9, "counter", Some(100.0))),
    );

    let c = w.task("train", "beta", D + H, 2);
    let r = w.start(c, D + 2 * H, "0");
    w.end(
        r,
        D + 3 * H,
        RunClass::Network,
        Some((3.6e6, "counter", Some(0.2))),
    );
    w.s.record_verdicts(
        &[(c, "priority".into(), "defer".into(), "busy".into())],
        D + 4 * H,
    )
    .unwrap();
    let r = w.start(c, D + 5 * H, "0");
    w.end(r, D + 6 * H, RunClass::Ok, None);

    let i = w.task("cancelled", "beta", D + 12 * H, 1);
    w.s.cancel(i, D + 13 * H).unwrap();

    let b = w.task("eval", "alpha", D + 16 * H + 30 * M, 1);
    let r = w.start(b, D + 16 * H + 30 * M, "");
    w.end(
        r,
        D + 17 * H + 30 * M,
        RunClass::AppError,
        Some((36_000.0, "estimate", None)),
    );

    let a = w.task("train", "alpha", D + 20 * H, 1);
    w.s.set_wait_reason(
        a,
        Some("offpeak-tariff: waits for 23:00"),
        true,
        D + 20 * H + M,
    )
    .unwrap();
    let r = w.start(a, D + 23 * H, "0,1");
    let p = |at: i64, gpu: u32, util: u32| SeriesPoint {
        run: r,
        at,
        gpu,
        util,
        mem: 0,
        temp_c: 40,
        power_mw: 500_000,
    };
    w.s.add_series(&[
        p(D + 23 * H + 10_000, 0, 50),
        p(D + 23 * H + 10_000, 1, 70),
        p(D + 23 * H + 5 * M, 0, 100),
        p(D + 23 * H + 20 * M, 0, 10),
    ])
    .unwrap();
    w.end(
        r,
        D + 25 * H,
        RunClass::Ok,
        Some((7.2e6, "counter", Some(0.4))),
    );

    w.task("queued", "beta", D + 30 * H, 1);
    let g = w.task("running", "beta", D + 35 * H, 1);
    w.start(g, D + 36 * H, "1");
    (w, a, c)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

pub(super) fn names() -> BTreeMap<u32, String> {
    BTreeMap::from([(0, "A100".to_string())])
}

#[test]
fn groups_count_runs_outcomes_gpu_hours_nearest_rank_waits_energy_and_cost() {
    let (w, _, _) = world();
    let acc = accounting(&w.s, &tariff(), (D, D + 48 * H, D + 40 * H), &names()).unwrap();
    let t = &acc.total;
    assert_eq!((t.key.as_str(), t.runs), ("all", 4));
    let outcomes: Vec<(&str, u64)> = t.outcomes.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(outcomes, [("app-error", 1), ("network", 1), ("ok", 2)]);
    assert!(close(t.gpu_hours, 2.0 * 2.0 + 1.0 + 1.0), "{}", t.gpu_hours);
    // Waits 0 (B), 1h (C's first run), 2h - 10 s (C's retry, ready at the
    // end of its 10 s backoff), 3h (A): nearest rank 2 of 4 and 4 of 4.
    assert_eq!(t.wait_p50_ms, Some(H));
    assert_eq!(t.wait_p95_ms, Some(3 * H));
    assert!(close(t.energy_kwh, 2.0 + 0.01 + 1.0), "{}", t.energy_kwh);
    assert!(close(t.estimated_kwh, 0.01));
    // Stored 0.4 (A) + 0.2 (C), B priced piecewise: 0.005 kWh at 1.0 then
    // 0.005 kWh at 3.0; C's retry has no energy.
    assert!(close(t.cost, 0.4 + 0.02 + 0.2), "{}", t.cost);
    assert_eq!(
        (acc.currency.as_str(), acc.time_zone.as_str()),
        ("EUR", "UTC")
    );
    // Tasks stored without an owner are the daemon's user's: one row.
    assert_eq!(acc.by_user.len(), 1);
    assert_eq!(
        acc.by_user[0].key,
        crate::users::name_of(crate::users::euid())
    );
    assert_eq!(acc.by_user[0].runs, t.runs);
    // Projects, most costly first; task names across projects.
    let keys = |g: &[nightjar_core::api::report::Group]| -> Vec<(String, u64)> {
        g.iter().map(|g| (g.key.clone(), g.runs)).collect()
    };
    assert_eq!(
        keys(&acc.by_project),
        [("alpha".into(), 2), ("beta".into(), 2)]
    );
    assert_eq!(
        keys(&acc.by_task),
        [("train".into(), 3), ("eval".into(), 1)]
    );
    let alpha = &acc.by_project[0];
    assert!(close(alpha.cost, 0.42));
    assert_eq!(
        (alpha.wait_p50_ms, alpha.wait_p95_ms),
        (Some(0), Some(3 * H))
    );
}

#[test]
fn a_run_that_waited_from_a_peak_hour_into_the_cheap_window_saved_the_difference() {
    let (w, _, _) = world();
    let acc = accounting(&w.s, &tariff(), (D, D + 48 * H, D + 40 * H), &names()).unwrap();
    // A: 2 kWh at 1000 W; from its submit (20:00-22:00, peak) 2 x 3.0 = 6.0,
    // as it ran (23:00-01:00, cheap) 2 x 0.2 = 0.4: saved 5.6. B and C did
    // not wait for a cheaper price (C's hours are all cheap): they save 0.
    let t = &acc.total;
    assert!(close(t.savings, 5.6), "{}", t.savings);
    assert!(close(t.cost_at_submit, 0.62 + 5.6), "{}", t.cost_at_submit);
    let beta = acc.by_project.iter().find(|g| g.key == "beta").unwrap();
    assert!(
        close(beta.savings, 0.0) && close(beta.cost, 0.2),
        "{beta:?}"
    );
}

#[test]
fn series_spread_energy_by_local_hour_and_count_the_queue_at_each_bucket() {
    let (w, _, _) = world();
    let acc = accounting(&w.s, &tariff(), (D, D + 48 * H, D + 40 * H), &names()).unwrap();
    let s = &acc.series;
    // 2 days / 200 = 14.4 min: 15-minute buckets.
    assert_eq!(s.bucket_ms, 15 * M);
    let mut kwh = [0.0; 24];
    kwh[23] = 1.0; // A, 23:00-01:00
    kwh[0] = 1.0;
    kwh[16] = 0.005; // B, 16:30-17:30
    kwh[17] = 0.005;
    kwh[2] = 1.0; // C's first run
    assert_eq!(s.energy_by_hour.len(), 24);
    for (h, want) in kwh.iter().enumerate() {
        assert!(
            close(s.energy_by_hour[h], *want),
            "hour {h}: {:?}",
            s.energy_by_hour
        );
    }
    for (h, p) in s.price_by_hour.iter().enumerate() {
        let want = match h {
            17..=22 => 3.0,
            23 | 0..=6 => 0.2,
            _ => 1.0,
        };
        assert!(close(*p, want), "hour {h}: {p}");
    }
    let failures: Vec<(&str, u64)> = s.failures.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(failures, [("app-error", 1), ("network", 1)]);
    // GPU 0: samples 50 and 100 in the 23:00 bucket, 10 in 23:15's.
    let g0 = &s.gpu_util[0];
    assert_eq!((g0.index, g0.name.as_str()), (0, "A100"));
    assert_eq!(g0.points, [(D + 23 * H, 75.0), (D + 23 * H + 15 * M, 10.0)]);
    let g1 = &s.gpu_util[1];
    assert_eq!((g1.index, g1.name.as_str()), (1, "GPU 1"));
    assert_eq!(g1.points, [(D + 23 * H, 70.0)]);
    // The queue at bucket starts up to now (D + 40h: 161 starts).
    assert_eq!(s.queue_len.len(), 161);
    let q = |t: i64| s.queue_len.iter().find(|p| p.0 == t).unwrap().1;
    assert_eq!(q(D), 0);
    assert_eq!(q(D + H), 1, "C from its submit");
    assert_eq!(q(D + 2 * H), 0, "C started");
    assert_eq!(q(D + 3 * H), 1, "C back in the queue after its first run");
    assert_eq!(q(D + 5 * H), 0);
    assert_eq!(q(D + 12 * H), 1, "I until its cancel");
    assert_eq!(q(D + 13 * H), 0);
    assert_eq!(q(D + 22 * H + 45 * M), 1, "A until 23:00");
    assert_eq!(q(D + 23 * H), 0);
    assert_eq!(q(D + 35 * H), 2, "F, and G until it started");
    assert_eq!(q(D + 36 * H), 1, "F still waits");
}

#[test]
fn the_longest_waits_name_the_reason_recorded_while_they_waited() {
    let (w, a, c) = world();
    let acc = accounting(&w.s, &tariff(), (D, D + 48 * H, D + 40 * H), &names()).unwrap();
    let waits: Vec<(i64, i64, Option<&str>)> = acc
        .longest_waits
        .iter()
        .map(|w| (w.task, w.waited_ms, w.why.as_deref()))
        .collect();
    assert_eq!(
        waits,
        [
            (a, 3 * H, Some("offpeak-tariff: waits for 23:00")),
            // C's longest: its retry, from the end of its backoff; its reason
            // is the policy's stored deferral.
            (c, 2 * H - 10_000, Some("priority: busy")),
        ]
    );
    assert_eq!(acc.longest_waits[0].name, "train");
    assert_eq!(acc.longest_waits[0].project, "alpha");
}

/// Every float in a JSON value is a number (serde writes NaN as null).
fn no_nulls_in_numbers(v: &serde_json::Value, path: &str) {
    match v {
        serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| {
            if !matches!(k.as_str(), "wait_p50_ms" | "wait_p95_ms" | "why" | "html") {
                assert!(!v.is_null(), "{path}.{k} is null");
            }
            no_nulls_in_numbers(v, &format!("{path}.{k}"));
        }),
        serde_json::Value::Array(a) => a.iter().for_each(|v| no_nulls_in_numbers(v, path)),
        _ => {}
    }
}

#[test]
fn an_empty_period_has_no_groups_no_percentiles_and_no_nan() {
    let (w, _, _) = world();
    for (from, to) in [(D + 40 * H, D + 40 * H), (D + 100 * H, D + 101 * H)] {
        let acc = accounting(&w.s, &tariff(), (from, to, D + 200 * H), &names()).unwrap();
        assert_eq!(acc.total.runs, 0);
        assert!(acc.by_project.is_empty() && acc.by_task.is_empty());
        assert_eq!((acc.total.wait_p50_ms, acc.total.wait_p95_ms), (None, None));
        assert!(acc.longest_waits.is_empty());
        assert_eq!(acc.series.energy_by_hour, vec![0.0; 24]);
        no_nulls_in_numbers(&serde_json::to_value(&acc).unwrap(), "acc");
    }
    let err = accounting(&w.s, &tariff(), (D + H, D, D), &names()).unwrap_err();
    assert!(err.to_string().contains("starts after it ends"), "{err}");
}

#[test]
fn a_century_long_period_counts_every_run_with_at_most_200_buckets() {
    let (w, _, _) = world();
    let from = D - 100 * 365 * 24 * H;
    let acc = accounting(&w.s, &tariff(), (from, D + 40 * H, D + 40 * H), &names()).unwrap();
    assert_eq!(acc.total.runs, 5, "H too");
    let n = (D + 40 * H - from + acc.series.bucket_ms - 1) / acc.series.bucket_ms;
    assert!(n <= 200 && acc.series.bucket_ms % (24 * H) == 0, "{n}");
    no_nulls_in_numbers(&serde_json::to_value(&acc).unwrap(), "acc");
}

#[test]
fn a_run_that_ended_before_it_started_counts_no_time_and_no_nan() {
    let mut w = World::new();
    let t = w.task("jump", "p", D, 1);
    let r = w.start(t, D + 2 * H, "0");
    // The clock jumped back an hour during the run.
    w.end(r, D + H, RunClass::Ok, Some((3.6e6, "counter", None)));
    let acc = accounting(&w.s, &tariff(), (D, D + 4 * H, D + 4 * H), &names()).unwrap();
    let g = &acc.total;
    assert_eq!((g.runs, g.gpu_hours), (1, 0.0));
    // Its energy is priced at its start (02:00, cheap).
    assert!(close(g.cost, 0.2), "{}", g.cost);
    assert!(close(acc.series.energy_by_hour[2], 1.0));
    no_nulls_in_numbers(&serde_json::to_value(&acc).unwrap(), "acc");
}
