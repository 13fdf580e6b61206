//! The demo's money story, checked: a GPU task submitted at the peak price
//! waits for the cheap window (the off-peak tariff policy), starts when the
//! price drops, draws the simulated GPU's power, and the report's energy,
//! cost and savings are non-zero and the arithmetic of that power and the
//! tariff's two prices.

use serde_json::Value;

use crate::harness::Nj;

fn hms(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[test]
fn a_task_deferred_to_the_cheap_window_is_priced_there_and_its_saving_reported() {
    let (peak, cheap, watts) = (1.2, 0.35, 300.0);
    let now = nightjar_core::time::now_ms();
    // The cheap window opens 30 s from now, whole seconds, for two hours:
    // time for a loaded machine to start the daemon, submit and make the
    // pass that defers the task before it opens (12 s left too little).
    let opens = (now / 1000 + 30) * 1000;
    let mut nj = Nj::new(&format!(
        "timezone = \"UTC\"\nslots = 1\n\
         [gpu]\nbackend = \"sim:1xA100-80GB\"\nsim_script = \"gpus.toml\"\nsample_period = \"200ms\"\nhost_mem_min_free = \"1MiB\"\n\
         [tariff]\ncurrency = \"CNY\"\nprice = {peak}\n\
         [[tariff.windows]]\nfrom = \"{}\"\nto = \"{}\"\nprice = {cheap}\n\
         [plugins]\nchain = [\"offpeak-tariff\"]\n",
        hms(opens),
        hms(opens + 2 * 3_600_000),
    ));
    std::fs::write(
        nj.dir.path().join("gpus.toml"),
        format!("[[gpu]]\npower_w = {watts}\nenergy = true\n"),
    )
    .unwrap();
    nj.start();
    let id = nj.submit(&["--name", "nightly-train", "--gpus", "1", "--", "sleep", "3"]);
    nj.until("the tariff defers it", || {
        nj.show(id)["task"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("offpeak-tariff"))
    });
    assert_eq!(nj.wait_within(id, std::time::Duration::from_secs(90)), 0);
    let run = nj.show(id)["runs"][0].clone();
    let started = run["started_at"].as_i64().unwrap();
    assert!(
        started >= opens,
        "started {} ms before the price dropped",
        opens - started
    );

    // The run's energy: the simulated GPU's 300 W over its run, as sampled
    // (every 200 ms: within two samples of the run's length).
    let secs = (run["finished_at"].as_i64().unwrap() - started) as f64 / 1000.0;
    let joules = run["energy"]["energy_j"].as_f64().unwrap();
    assert!(
        (joules - watts * secs).abs() <= watts * 0.45,
        "{joules} J for {secs} s at {watts} W"
    );
    let kwh = joules / 3.6e6;

    let report: Value = nj.json(&["report", "--since", "1h"]);
    let total = &report["total"];
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 + b.abs() * 1e-6;
    assert!(close(total["energy_kwh"].as_f64().unwrap(), kwh), "{total}");
    assert!(
        close(total["cost"].as_f64().unwrap(), kwh * cheap),
        "{total}"
    );
    // Started at submit it would have run at the peak price.
    assert!(
        close(total["cost_at_submit"].as_f64().unwrap(), kwh * peak),
        "{total}"
    );
    assert!(
        close(total["savings"].as_f64().unwrap(), kwh * (peak - cheap)),
        "{total}"
    );

    // The text a person reads: non-zero, and no `-0.00`.
    let text = nj.ok(&["report", "--since", "1h"]);
    assert!(!text.contains("-0.00"), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("default"))
        .unwrap_or_else(|| panic!("no project row:\n{text}"));
    assert!(
        !row.contains(" 0.00 ") && !row.contains("0.000 kWh"),
        "{row}"
    );
}
