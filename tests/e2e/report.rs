//! `nightjar report`: real short runs in two projects on simulated GPUs
//! (power scripted through `gpu.sim_script`) and a CPU-only estimate,
//! under a tariff with two windows; the report's sums against what `show`
//! says of each run, its table, CSV and JSON, and the flags it refuses.

use serde_json::Value;

use crate::harness::Nj;

const J_PER_KWH: f64 = 3_600_000.0;

fn world() -> Nj {
    let mut nj = Nj::new(
        "timezone = \"UTC\"\nslots = 4\n\
         [gpu]\nbackend = \"sim:2xA100-80GB\"\nsim_script = \"gpus.toml\"\nsample_period = \"200ms\"\nhost_mem_min_free = \"1MiB\"\n\
         [tariff]\ncurrency = \"EUR\"\nprice = 0.5\ncpu_watts_per_core = 10.0\nrapl = \"off\"\n\
         [[tariff.windows]]\nfrom = \"00:00\"\nto = \"12:00\"\nprice = 1.0\n\
         [[tariff.windows]]\nfrom = \"12:00\"\nto = \"24:00\"\nprice = 2.0\n",
    );
    std::fs::write(
        nj.dir.path().join("gpus.toml"),
        "[[gpu]]\npower_w = 300\nenergy = true\n[[gpu]]\npower_w = 300\nenergy = true\n",
    )
    .unwrap();
    nj.start();
    nj
}

/// The ids of alpha's two GPU runs, beta's CPU run and beta's failure.
fn run_tasks(nj: &Nj) -> Vec<i64> {
    let train = || {
        nj.submit(&[
            "--project",
            "alpha",
            "--name",
            "train",
            "--gpus",
            "1",
            "--",
            "sleep",
            "1.5",
        ])
    };
    let ids = vec![
        train(),
        train(),
        nj.submit(&[
            "--project",
            "beta",
            "--name",
            "prep",
            "--cpus",
            "1",
            "--",
            "sleep",
            "1",
        ]),
        nj.submit(&[
            "--project",
            "beta",
            "--name",
            "prep",
            "--",
            "sh",
            "-c",
            "exit 3",
        ]),
    ];
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(nj.wait(id), if i == 3 { 3 } else { 0 }, "task {id}");
    }
    ids
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + b.abs())
}

#[test]
fn report_sums_the_periods_runs_by_project_as_show_reports_each_run() {
    let nj = world();
    let ids = run_tasks(&nj);
    // What `show` says of each run, summed by hand.
    let (mut joules, mut cost, mut gpu_hours) = (0.0, 0.0, 0.0);
    for &id in &ids {
        let run = nj.show(id)["runs"][0].clone();
        let e = &run["energy"];
        joules += e["energy_j"].as_f64().unwrap_or(0.0);
        cost += e["cost"].as_f64().unwrap_or(0.0);
        let secs = (run["finished_at"].as_i64().unwrap() - run["started_at"].as_i64().unwrap())
            as f64
            / 1e3;
        let gpus = run["gpus"]
            .as_str()
            .map_or(0, |g| g.split(',').filter(|s| !s.is_empty()).count());
        gpu_hours += gpus as f64 * secs / 3600.0;
    }
    assert!(joules > 0.0 && cost > 0.0);

    let acc: Value = nj.json(&["report", "--since", "1h"]);
    let t = &acc["total"];
    assert_eq!(t["runs"], 4, "{acc}");
    assert_eq!(t["outcomes"]["ok"], 3, "{acc}");
    assert_eq!(t["outcomes"]["app-error"], 1, "{acc}");
    assert_eq!(
        acc["series"]["failures"],
        serde_json::json!({ "app-error": 1 })
    );
    let gh = t["gpu_hours"].as_f64().unwrap();
    assert!(gh > 0.0 && close(gh, gpu_hours), "{gh} vs {gpu_hours}");
    let kwh = t["energy_kwh"].as_f64().unwrap();
    assert!(close(kwh, joules / J_PER_KWH), "{kwh} kWh vs {joules} J");
    assert!(
        t["estimated_kwh"].as_f64().unwrap() > 0.0,
        "the CPU run's estimate"
    );
    assert!(
        close(t["cost"].as_f64().unwrap(), cost),
        "{} vs {cost}",
        t["cost"]
    );
    assert_eq!(acc["currency"], "EUR");
    assert_eq!(acc["time_zone"], "UTC");
    let projects: Vec<&str> = acc["by_project"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    let mut sorted = projects.clone();
    sorted.sort();
    assert_eq!(sorted, ["alpha", "beta"]);
    // Every run is its submitter's: one user here, owning them all.
    let users = acc["by_user"].as_array().unwrap();
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(users[0]["runs"], t["runs"]);
    let me = nj.json(&["whoami"]);
    assert_eq!(users[0]["key"], me["user"]);
    let by_task: Vec<(&str, u64)> = acc["by_task"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["key"].as_str().unwrap(), g["runs"].as_u64().unwrap()))
        .collect();
    assert!(
        by_task.contains(&("train", 2)) && by_task.contains(&("prep", 2)),
        "{by_task:?}"
    );
    assert_eq!(
        acc["series"]["energy_by_hour"].as_array().unwrap().len(),
        24
    );
    assert_eq!(acc["series"]["price_by_hour"].as_array().unwrap().len(), 24);
    let util = acc["series"]["gpu_util"].as_array().unwrap();
    assert!(
        !util.is_empty() && util[0]["name"].as_str().unwrap().contains("A100"),
        "{util:?}"
    );
    assert!(acc.get("html").is_none());

    // The table: a row per project, the total, the footer.
    let table = nj.ok(&["report", "--since", "1h"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("PROJECT") && lines[0].contains("SAVED"),
        "{table}"
    );
    assert!(lines.iter().any(|l| l.starts_with("alpha ")), "{table}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("beta ") && l.contains('~')),
        "{table}"
    );
    assert!(lines.iter().any(|l| l.starts_with("total ")), "{table}");
    assert!(
        table.contains("4 runs ended") && table.contains("money in EUR"),
        "{table}"
    );
    assert!(
        table.contains("SAVED: what the runs would have cost"),
        "{table}"
    );

    // The CSV: a header and one line per project.
    let csv = nj.ok(&["report", "--since", "1h", "--csv"]);
    let rows: Vec<Vec<&str>> = csv
        .split_terminator("\r\n")
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert_eq!(rows[0][..3], ["project", "runs", "outcome_ok"], "{csv}");
    let col = |name: &str| rows[0].iter().position(|h| *h == name).unwrap();
    let beta = rows.iter().find(|r| r[0] == "beta").unwrap();
    assert_eq!(
        (beta[col("runs")], beta[col("outcome_app-error")]),
        ("2", "1"),
        "{csv}"
    );
    assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{csv}");
    let by_task = nj.ok(&["report", "--since", "1h", "--csv", "--by", "task"]);
    assert!(by_task.starts_with("task,runs,"), "{by_task}");

    // --html writes the page; the JSON it came with is still printed without it.
    let page = nj.dir.path().join("report.html");
    let all = nj.ok(&[
        "report",
        "--since",
        "1h",
        "--by",
        "all",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(all.lines().nth(1).unwrap().starts_with("total "), "{all}");
    assert!(std::fs::read_to_string(&page).unwrap().contains("<html"));
}

#[test]
fn report_of_a_period_without_runs_is_empty_and_well_formed() {
    let nj = world();
    let acc = nj.json(&["report", "--from", "2001-01-01", "--to", "2001-01-01"]);
    assert_eq!(acc["total"]["runs"], 0, "{acc}");
    assert!(acc["total"]["wait_p50_ms"].is_null());
    assert_eq!(acc["by_project"], serde_json::json!([]));
    let csv = nj.ok(&["report", "--since", "100y", "--csv"]);
    assert_eq!(csv.split_terminator("\r\n").count(), 1, "{csv}");
    // No runs, so no user rows: only the total.
    let users = nj.json(&[
        "report",
        "--by",
        "user",
        "--from",
        "2001-01-01",
        "--to",
        "2001-01-02",
    ]);
    assert_eq!(users["by_user"], serde_json::json!([]), "{users}");
}

#[test]
fn report_flags_that_make_no_period_are_refused_naming_the_flag() {
    // No daemon needed: the flags are checked first.
    let nj = Nj::new("");
    for (args, flag) in [
        (&["report", "--since", "soon"][..], "--since"),
        (&["report", "--from", "2024-01-02"][..], "--to"),
        (
            &["report", "--from", "2024-01-02", "--to", "2024-01-01"][..],
            "--from",
        ),
        (
            &["report", "--from", "yesterday", "--to", "2024-01-01"][..],
            "--from",
        ),
        (
            &[
                "report",
                "--since",
                "7d",
                "--from",
                "2024-01-01",
                "--to",
                "2024-01-02",
            ][..],
            "--since",
        ),
        (&["report", "--by", "team"][..], "--by"),
    ] {
        let out = nj.cli(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?} should name {flag}: {err}");
    }
}
