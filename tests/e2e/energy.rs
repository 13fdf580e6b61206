//! Energy and cost per run: simulated GPUs scripted through
//! `gpu.sim_script` (power, and whether the GPU has an energy counter), a
//! tariff with two windows whose boundary falls inside the runs, and a
//! CPU-only run's estimate; then a stand-in NVML GPU with no energy counter.
//! Every expected value is computed here by hand from the runs' recorded
//! start and end.

use serde_json::Value;

use crate::gpus::{GpuWorld, two_gpus};
use crate::harness::Nj;

const J_PER_KWH: f64 = 3_600_000.0;
/// The GPU sample period these tests configure, in seconds.
const PERIOD: f64 = 0.2;
/// Slack for the sampler's first round after a run's start and the rounds
/// between the run's exit and its end being recorded, seconds.
const LAG: f64 = 1.0;

fn hms(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn run_of(nj: &Nj, id: i64) -> Value {
    nj.show(id)["runs"][0].clone()
}

/// Seconds from `origin` (Unix ms) to the run's `key` (differences of
/// whole milliseconds first: Unix seconds as f64 would lose microseconds).
fn secs_from(run: &Value, key: &str, origin: i64) -> f64 {
    (run[key].as_i64().unwrap() - origin) as f64 / 1000.0
}

#[test]
fn gpu_and_cpu_runs_crossing_a_tariff_boundary_are_priced_piecewise() {
    let now = nightjar_core::time::now_ms();
    // The boundary: far enough ahead that the runs start before it (the
    // daemon and its first pass start meanwhile, on a CI machine running
    // the other tiers beside it: 40 s, as `money.rs` learnt), whole seconds.
    let boundary = (now / 1000 + 40) * 1000;
    let (p_before, p_after) = (1.0, 4.0);
    let mut nj = Nj::new(&format!(
        "timezone = \"UTC\"\nslots = 4\n\
         [gpu]\nbackend = \"sim:2xA100-80GB\"\nsim_script = \"gpus.toml\"\nsample_period = \"200ms\"\nhost_mem_min_free = \"1MiB\"\n\
         [tariff]\ncurrency = \"EUR\"\nprice = 0.5\ncpu_watts_per_core = 10.0\nrapl = \"off\"\n\
         [[tariff.windows]]\nfrom = \"{}\"\nto = \"{}\"\nprice = {p_before}\n\
         [[tariff.windows]]\nfrom = \"{}\"\nto = \"{}\"\nprice = {p_after}\n",
        hms(boundary - 3_600_000),
        hms(boundary),
        hms(boundary),
        hms(boundary + 3_600_000),
    ));
    // GPU 0 has an energy counter, GPU 1 has none; both draw 300 W (at 0%
    // utilisation: load with no run on the GPU would close it as foreign).
    let power = 300.0;
    std::fs::write(
        nj.dir.path().join("gpus.toml"),
        "[[gpu]]\npower_w = 300\nenergy = true\n[[gpu]]\npower_w = 300\nenergy = false\n",
    )
    .unwrap();
    nj.start();
    // Each run lasts until 8 s after the boundary.
    let until = format!(
        "while [ $(date +%s) -lt {} ]; do sleep 0.1; done",
        boundary / 1000 + 8
    );
    let gpu_a = nj.submit(&["--gpus", "1", "--", "sh", "-c", &until]);
    let gpu_b = nj.submit(&["--gpus", "1", "--", "sh", "-c", &until]);
    let cpu = nj.submit(&["--cpus", "1", "--", "sh", "-c", &until]);
    for id in [gpu_a, gpu_b, cpu] {
        assert_eq!(nj.wait(id), 0, "task {id}");
    }
    // What a run drew before and after the boundary, at the two prices.
    let by_hand = |run: &Value, watts: f64| {
        let (start, end, b) = (
            secs_from(run, "started_at", boundary),
            secs_from(run, "finished_at", boundary),
            0.0,
        );
        assert!(start < b && end > b, "the run crosses the boundary: {run}");
        let energy = watts * (end - start);
        let cost = watts * ((b - start) * p_before + (end - b) * p_after) / J_PER_KWH;
        (energy, cost)
    };

    // GPU runs: 300 W for the run's time, within the sampling's slack.
    let e_tol = power * (2.0 * PERIOD + LAG);
    let c_tol = e_tol * p_after / J_PER_KWH + power * PERIOD * (p_after - p_before) / J_PER_KWH;
    let mut sources = Vec::new();
    for id in [gpu_a, gpu_b] {
        let run = run_of(&nj, id);
        let e = &run["energy"];
        let (energy, cost) = by_hand(&run, power);
        let got_e = e["energy_j"].as_f64().unwrap();
        let got_c = e["cost"].as_f64().unwrap();
        assert!(
            (got_e - energy).abs() <= e_tol,
            "energy {got_e} J vs {energy} J by hand ± {e_tol}: {run}"
        );
        assert!(
            (got_c - cost).abs() <= c_tol,
            "cost {got_c} vs {cost} by hand ± {c_tol}: {run}"
        );
        assert_eq!(e["currency"], "EUR");
        // The GPU with a counter is read from it; the other is integrated.
        let expected = if run["gpus"] == "0" {
            "counter"
        } else {
            "integrated"
        };
        assert_eq!(e["source"], expected, "{run}");
        sources.push(expected);
    }
    sources.sort();
    assert_eq!(sources, ["counter", "integrated"], "one run on each GPU");

    // The CPU-only run: 10 W x 1 core for its time, an estimate, priced
    // second by second (one second's draw may take the other price).
    let run = run_of(&nj, cpu);
    let (energy, cost) = by_hand(&run, 10.0);
    let e = &run["energy"];
    assert_eq!(e["source"], "estimate", "{run}");
    assert!(
        (e["energy_j"].as_f64().unwrap() - energy).abs() < 1e-6,
        "{run}"
    );
    let c_tol = 10.0 * (p_after - p_before) / J_PER_KWH + 1e-12;
    assert!(
        (e["cost"].as_f64().unwrap() - cost).abs() <= c_tol,
        "cost {cost} by hand: {run}"
    );

    // People see it: the run line in `show`, the columns of `ls --wide`.
    let shown = nj.ok(&["show", &cpu.to_string()]);
    assert!(
        shown.contains("energy  ") && shown.contains("(estimate), cost ") && shown.contains(" EUR"),
        "{shown}"
    );
    let wide = nj.ok(&["ls", "--wide"]);
    assert!(
        wide.contains("ENERGY") && wide.contains("COST") && wide.contains("Wh"),
        "{wide}"
    );
    let rows = nj.json(&["ls"]);
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == cpu)
        .unwrap()
        .clone();
    assert!(
        (row["energy_j"].as_f64().unwrap() - energy).abs() < 1e-6,
        "{row}"
    );
}

#[test]
fn a_stand_in_nvml_gpu_without_an_energy_counter_integrates_its_power() {
    // GPU 0 is busy with a foreign process (closed), so the run gets GPU 1,
    // which reports 30 W and no energy counter. A flat 2.0 per kWh.
    let w = GpuWorld::new(
        "[tariff]\ncurrency = \"CNY\"\nprice = 2.0\n",
        &two_gpus("0.util=90\n0.procs=999:1000", "1.power_mw=30000\n1.util=0"),
    );
    let id = w.nj.submit(&["--gpus", "1", "--", "sleep", "2"]);
    assert_eq!(w.nj.wait(id), 0);
    let run = run_of(&w.nj, id);
    assert_eq!(run["gpus"], "1", "{run}");
    let e = &run["energy"];
    assert_eq!(e["source"], "integrated", "{run}");
    let got = e["energy_j"].as_f64().unwrap();
    let started = run["started_at"].as_i64().unwrap();
    let by_hand = 30.0 * secs_from(&run, "finished_at", started);
    let tol = 30.0 * (2.0 * 0.1 + LAG);
    assert!(
        (got - by_hand).abs() <= tol,
        "{got} J vs {by_hand} J ± {tol}: {run}"
    );
    let cost = e["cost"].as_f64().unwrap();
    assert!(
        (cost - got * 2.0 / J_PER_KWH).abs() < 1e-12,
        "flat price: {run}"
    );
    assert!(
        w.nj.ok(&["show", &id.to_string()])
            .contains("(integrated), cost ")
    );
}
