//! The metrics' text: the families a scrape finds, escaped label values,
//! the caps on user-named labels.

use std::time::Duration;

use super::*;

fn reading() -> Reading {
    Reading {
        tasks: vec![
            ("queued".into(), "vision".into(), 3),
            ("running".into(), "vision".into(), 1),
            ("succeeded".into(), "nlp".into(), 7),
        ],
        gpus: vec![GpuReading {
            index: 0,
            uuid: "GPU-0".into(),
            name: "Sim A100".into(),
            util: Some(0.5),
            mem_used: Some(1 << 30),
            mem_total: Some(80 << 30),
            temp_c: Some(61),
            power_w: Some(250.5),
            energy_j: Some(9000.0),
        }],
        outbox_pending: 2,
        outbox_dead: 1,
        archive_backlog: 4,
    }
}

#[test]
fn a_scrape_holds_every_family_with_its_values_and_ends_with_eof() {
    let m = Metrics::default();
    m.run_ended("ok", "vision");
    m.run_ended("ok", "vision");
    m.run_ended("app-error", "nlp");
    m.pass_took(Duration::from_millis(3));
    m.plugin_call_took("priority", Duration::from_micros(700));
    let text = m.render(&reading()).unwrap();
    for line in [
        "nightjar_runs_ended_total{class=\"ok\",project=\"vision\"} 2",
        "nightjar_runs_ended_total{class=\"app-error\",project=\"nlp\"} 1",
        "nightjar_pass_duration_seconds_count 1",
        "nightjar_plugin_call_duration_seconds_count{plugin=\"priority\"} 1",
        "nightjar_tasks{state=\"queued\",project=\"vision\"} 3",
        "nightjar_tasks{state=\"succeeded\",project=\"nlp\"} 7",
        "nightjar_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-0\",name=\"Sim A100\"} 0.5",
        "nightjar_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-0\",name=\"Sim A100\"} 1073741824",
        "nightjar_gpu_temperature_celsius{gpu=\"0\",uuid=\"GPU-0\",name=\"Sim A100\"} 61",
        "nightjar_gpu_power_watts{gpu=\"0\",uuid=\"GPU-0\",name=\"Sim A100\"} 250.5",
        "nightjar_gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-0\",name=\"Sim A100\"} 9000.0",
        "nightjar_outbox_pending 2",
        "nightjar_outbox_dead 1",
        "nightjar_archive_backlog 4",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
    assert!(
        text.contains("nightjar_pass_duration_seconds_bucket{le=\"0.004\"} 1"),
        "{text}"
    );
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn a_hostile_project_name_stays_one_escaped_label_value() {
    let m = Metrics::default();
    let evil = "a\"} 1\nnightjar_fake 9\\";
    m.run_ended("ok", evil);
    let text = m.render(&Reading::default()).unwrap();
    assert!(
        text.contains(r#"project="a\"} 1\nnightjar_fake 9\\"} 1"#),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("nightjar_fake")),
        "no line of its own: {text}"
    );
}

#[test]
fn projects_past_the_cap_are_counted_as_other() {
    let m = Metrics::default();
    for i in 0..MAX_PROJECTS + 5 {
        m.run_ended("ok", &format!("p{i}"));
    }
    let text = m.render(&Reading::default()).unwrap();
    let series = text
        .lines()
        .filter(|l| l.starts_with("nightjar_runs_ended_total{"))
        .count();
    assert_eq!(series, MAX_PROJECTS + 1, "{text}");
    assert!(
        text.contains("nightjar_runs_ended_total{class=\"ok\",project=\"(other)\"} 5"),
        "{text}"
    );
    let tasks = Reading {
        tasks: (0..MAX_PROJECTS + 3)
            .map(|i| ("queued".to_string(), format!("p{i}"), 1 + i as u64))
            .collect(),
        ..Reading::default()
    };
    let text = m.render(&tasks).unwrap();
    // The three smallest (1, 2 and 3 tasks) are summed as `(other)`.
    assert!(
        text.contains("nightjar_tasks{state=\"queued\",project=\"(other)\"} 6"),
        "{text}"
    );
}

/// Every series name a full scrape writes (histograms with their
/// `_bucket`, `_sum` and `_count`).
fn names(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_grafana_dashboard_parses_and_names_only_series_the_daemon_writes() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/grafana/nightjar-dashboard.json"
    );
    let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .expect("the dashboard is JSON");
    let m = Metrics::default();
    m.run_ended("ok", "p");
    m.pass_took(Duration::from_millis(1));
    m.plugin_call_took("priority", Duration::from_millis(1));
    let written = names(&m.render(&reading()).unwrap());
    let exprs: Vec<&str> = dash["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .filter_map(|t| t["expr"].as_str())
        .collect();
    assert!(exprs.len() >= 12, "{exprs:?}");
    let mut used = std::collections::BTreeSet::new();
    for e in &exprs {
        for (at, _) in e.match_indices("nightjar_") {
            let name: String = e[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                written.contains(&name),
                "{name} (in {e}) is not a series the daemon writes: {written:?}"
            );
            used.insert(name);
        }
    }
    // Every family is on the dashboard.
    for family in [
        "nightjar_tasks",
        "nightjar_runs_ended_total",
        "nightjar_gpu_utilization_ratio",
        "nightjar_gpu_memory_used_bytes",
        "nightjar_gpu_temperature_celsius",
        "nightjar_gpu_power_watts",
        "nightjar_gpu_energy_joules_total",
        "nightjar_pass_duration_seconds_bucket",
        "nightjar_plugin_call_duration_seconds_bucket",
        "nightjar_outbox_pending",
        "nightjar_outbox_dead",
        "nightjar_archive_backlog",
    ] {
        assert!(used.contains(family), "{family} is not on the dashboard");
    }
}
