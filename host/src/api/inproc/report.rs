//! `report`: a period's runs summed by project, their estimated energy
//! priced second by second at the tariff's windows, on the given clock.
//! (GPU energy sampled from a scripted power draw, and the report's table,
//! CSV, JSON and HTML, are the end-to-end tier's: `tests/e2e/report*.rs`.)

use super::World;
use crate::api::{Report, Show};
use crate::daemon::testkit::T0;
use crate::store::RunClass;

const HOUR: i64 = 3_600_000;

/// 10 W a pinned core, 1.0 EUR a kWh until noon and 2.0 after.
fn world() -> World {
    World::new(
        "slots = 4\n[tariff]\ncurrency = \"EUR\"\nprice = 0.5\ncpu_watts_per_core = 10.0\nrapl = \"off\"\n\
         [[tariff.windows]]\nfrom = \"00:00\"\nto = \"12:00\"\nprice = 1.0\n\
         [[tariff.windows]]\nfrom = \"12:00\"\nto = \"24:00\"\nprice = 2.0\n",
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn report_sums_a_days_runs_by_project_priced_piecewise_at_the_tariff() {
    let w = world();
    // alpha: 11:00 to 13:00 on one core, across the noon boundary:
    // 0.01 kWh at 1.0 and 0.01 kWh at 2.0.
    w.fx.clock.set(T0 + 11 * HOUR);
    let a = w.task(
        "train",
        &["true"],
        "project = \"alpha\"\nresources = { cpus = 1 }",
    );
    w.pass();
    w.advance(2 * HOUR);
    w.end(a, RunClass::Ok, 0);
    // beta: 13:00 to 14:00, failed: 0.01 kWh at 2.0.
    let b = w.task(
        "prep",
        &["false"],
        "project = \"beta\"\nresources = { cpus = 1 }",
    );
    w.pass();
    w.advance(HOUR);
    w.end(b, RunClass::AppError, 3);

    let runs_cost: f64 = [a, b]
        .iter()
        .map(|&id| {
            let t = w.call(Show { id }).unwrap();
            t.runs[0]
                .energy
                .as_ref()
                .and_then(|e| e.cost)
                .unwrap_or(0.0)
        })
        .sum();
    let acc = w
        .call(Report {
            from: T0,
            to: T0 + 24 * HOUR,
            html: false,
        })
        .unwrap();
    let t = &acc.total;
    assert_eq!(t.runs, 2, "{acc:?}");
    assert_eq!(t.outcomes.get("ok"), Some(&1));
    assert_eq!(t.outcomes.get("app-error"), Some(&1));
    assert!(close(t.estimated_kwh, 0.03), "{}", t.estimated_kwh);
    assert!(
        close(t.cost, 0.05),
        "piecewise: 0.01 + 0.02 + 0.02, not {}",
        t.cost
    );
    assert!(
        close(runs_cost, t.cost),
        "show's runs add up to the report: {runs_cost}"
    );
    assert_eq!(
        (acc.currency.as_str(), acc.time_zone.as_str()),
        ("EUR", "UTC")
    );
    let by: Vec<(&str, u64, f64)> = acc
        .by_project
        .iter()
        .map(|g| (g.key.as_str(), g.runs, g.cost))
        .collect();
    assert_eq!(by.len(), 2, "{by:?}");
    let alpha = by.iter().find(|g| g.0 == "alpha").expect("alpha");
    let beta = by.iter().find(|g| g.0 == "beta").expect("beta");
    assert!(alpha.1 == 1 && close(alpha.2, 0.03), "{alpha:?}");
    assert!(beta.1 == 1 && close(beta.2, 0.02), "{beta:?}");
}

#[test]
fn a_period_without_runs_reports_nothing_and_is_well_formed() {
    let w = world();
    let a = w.task("train", &["true"], "");
    w.pass();
    w.advance(HOUR);
    w.end(a, RunClass::Ok, 0);
    let acc = w
        .call(Report {
            from: T0 + 48 * HOUR,
            to: T0 + 72 * HOUR,
            html: false,
        })
        .unwrap();
    assert_eq!(acc.total.runs, 0, "{acc:?}");
    assert!(
        acc.by_project.is_empty() && acc.by_user.is_empty(),
        "{acc:?}"
    );
    assert_eq!(acc.total.cost, 0.0);
    assert_eq!(acc.total.wait_p50_ms, None, "no waits to take a median of");
}

#[test]
fn a_repeated_end_keeps_the_energy_the_first_one_recorded() {
    let w = world();
    w.fx.clock.set(T0 + 11 * HOUR);
    let a = w.task("train", &["true"], "resources = { cpus = 1 }");
    w.pass();
    w.advance(HOUR);
    let run = w.run(a);
    w.end(a, RunClass::Ok, 0);
    let first = w.show(a).runs[0].energy.clone().expect("an estimate");
    assert!(
        close(first.energy_j, 36_000.0),
        "10 W for an hour: {first:?}"
    );
    // What a GPU run's first end records (the monitor's share, taken from
    // it once), written behind the daemon's back.
    rusqlite::Connection::open(w.fx.daemon.cfg.db_path())
        .unwrap()
        .execute(
            "UPDATE runs SET energy_j = 123.0, energy_source = 'nvml' WHERE id = ?1",
            [run],
        )
        .unwrap();
    // The end reported again an hour later (a retried report, a SLURM poll).
    w.advance(HOUR);
    assert!(w.fx.end(run, RunClass::Ok, 0), "already recorded");
    let again = w.show(a).runs[0].energy.clone().expect("kept");
    assert!(close(again.energy_j, 123.0), "{again:?}");
    assert_eq!(again.source, "nvml");
}
