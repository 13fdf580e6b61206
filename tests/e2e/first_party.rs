//! The first-party policies end to end: the tariff, urgent bypass, fair
//! share with preemption, and what is never preempted.

use crate::harness::Nj;
use crate::policies::world;

#[test]
fn offpeak_tariff_defers_normal_work_to_the_cheap_window_and_lets_urgent_run() {
    // A cheap window twelve hours away, whatever the time now.
    let hour = (chrono::Utc::now().timestamp().div_euclid(3600) + 12).rem_euclid(24);
    let mut nj = world(&format!(
        "timezone = \"UTC\"\n[plugins]\nchain = [\"offpeak-tariff\"]\n[plugin.offpeak-tariff.config]\ncurrency = \"CNY\"\npeak_price = 1.2\n[[plugin.offpeak-tariff.config.windows]]\nstart = \"{hour:02}:00\"\nend = \"{:02}:00\"\nprice = 0.35\n",
        (hour + 1) % 24
    ));
    nj.start();
    let normal = nj.submit(&["--", "true"]);
    let urgent = nj.submit(&["--priority", "urgent", "--", "true"]);
    assert_eq!(
        nj.wait(urgent),
        0,
        "urgent work is never deferred by the tariff"
    );
    nj.until("deferred", || {
        nj.show(normal)["task"]["reason"].as_str().is_some()
    });
    let why = nj.ok(&["why", &normal.to_string()]);
    assert!(
        why.contains(&format!(
            "deferred by offpeak-tariff: price 1.20 CNY/kWh until {hour:02}:00"
        )) && why.contains("then 0.35 CNY/kWh"),
        "{why}"
    );
}

#[test]
fn offpeak_tariff_follows_the_hosts_tariff_and_its_own_windows_override_it() {
    // The daemon's [tariff]: 1.10 EUR, 0.25 EUR in a window ten hours away.
    let hour = (chrono::Utc::now().timestamp().div_euclid(3600) + 10).rem_euclid(24);
    let tariff = format!(
        "timezone = \"UTC\"\n[tariff]\ncurrency = \"EUR\"\nprice = 1.1\n[[tariff.windows]]\nfrom = \"{hour:02}:00\"\nto = \"{:02}:00\"\nprice = 0.25\n",
        (hour + 2) % 24
    );
    let mut nj = world(&format!(
        "{tariff}[plugins]\nchain = [\"offpeak-tariff\"]\n[plugin.offpeak-tariff.config]\nmargin = \"30m\"\n"
    ));
    nj.start();
    let id = nj.submit(&["--", "true"]);
    nj.until("deferred", || {
        nj.show(id)["task"]["reason"].as_str().is_some()
    });
    let why = nj.ok(&["why", &id.to_string()]);
    assert!(
        why.contains(&format!(
            "deferred by offpeak-tariff: price 1.10 EUR/kWh until {hour:02}:00 UTC"
        )) && why.contains("then 0.25 EUR/kWh"),
        "the host's tariff, read through the import: {why}"
    );
    drop(nj);
    // Windows in the policy's config win over [tariff] (older configs keep working).
    let mut nj = world(&format!(
        "{tariff}[plugins]\nchain = [\"offpeak-tariff\"]\n[plugin.offpeak-tariff.config]\ncurrency = \"CNY\"\npeak_price = 1.2\n[[plugin.offpeak-tariff.config.windows]]\nstart = \"{hour:02}:00\"\nend = \"{:02}:00\"\nprice = 0.35\n",
        (hour + 1) % 24
    ));
    nj.start();
    let id = nj.submit(&["--", "true"]);
    nj.until("deferred", || {
        nj.show(id)["task"]["reason"].as_str().is_some()
    });
    let why = nj.ok(&["why", &id.to_string()]);
    assert!(
        why.contains("price 1.20 CNY/kWh until") && why.contains("then 0.35 CNY/kWh"),
        "its own windows: {why}"
    );
}

#[test]
fn all_four_first_party_policies_load_from_the_binary_with_no_plugin_folder() {
    let mut nj = Nj::new(
        "[plugins]\nchain = [\"priority\", \"offpeak-tariff\", \"fair-share\", \"thermal\"]\n[plugin.offpeak-tariff.config]\n[[plugin.offpeak-tariff.config.windows]]\nstart = \"00:00\"\nend = \"23:59\"\nprice = 0.3\n",
    );
    nj.start();
    let v = nj.json(&["plugins", "ls"]);
    let states: Vec<(&str, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        vec![
            ("priority", "ok"),
            ("offpeak-tariff", "ok"),
            ("fair-share", "ok"),
            ("thermal", "ok")
        ]
    );
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .all(|m| m["source"] == "built-in")
    );
    let id = nj.submit(&["--priority", "urgent", "--", "true"]);
    assert_eq!(nj.wait(id), 0);
    assert!(
        nj.ok(&["why", &id.to_string()]).contains("score"),
        "started through the chain"
    );
}

#[test]
fn urgent_tasks_bypass_the_deferrals_the_config_allows() {
    let mut nj = world("[plugins]\nchain = [\"hostile\"]\nurgent_bypass = [\"hostile\"]\n");
    nj.start();
    let normal = nj.submit(&["--project", "held-by-plugin", "--", "true"]);
    let urgent = nj.submit(&[
        "--project",
        "held-by-plugin",
        "--priority",
        "urgent",
        "--",
        "true",
    ]);
    assert_eq!(nj.wait(urgent), 0, "urgent bypasses hostile's deferral");
    nj.until("deferred", || {
        nj.show(normal)["task"]["reason"].as_str().is_some()
    });
    assert_eq!(nj.show(normal)["task"]["state"], "queued");
}

#[test]
fn fair_share_preempts_a_preemptible_hog_for_a_starved_project_and_the_host_requeues_it() {
    let mut nj = world(
        "[plugins]\nchain = [\"fair-share\"]\npreempt_min_runtime = \"100ms\"\n[plugin.fair-share.config]\npreempt_below = 0.5\n",
    );
    nj.start();
    let marker = nj.path("work").join("hog-ran-once");
    let script = format!(
        "if [ -e {m} ]; then exit 0; fi; touch {m}; exec sleep 60",
        m = marker.display()
    );
    let hog = nj.submit(&[
        "--project",
        "hog",
        "--preemptible",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    nj.until("hog running", || marker.exists());
    std::thread::sleep(std::time::Duration::from_millis(300));
    let starved = nj.submit(&["--project", "starved", "--", "true"]);
    assert_eq!(nj.wait(starved), 0, "the starved project gets the slot");
    assert_eq!(
        nj.wait(hog),
        0,
        "the hog is queued again and finishes later"
    );
    let runs = nj.show(hog)["runs"].clone();
    assert_eq!(runs[0]["class"], "preempted", "{runs}");
    assert_eq!(runs[1]["class"], "ok");
    let s_start = nj.show(starved)["runs"][0]["started_at"].as_i64().unwrap();
    assert!(
        runs[1]["started_at"].as_i64().unwrap() >= s_start,
        "the starved task went first"
    );
    let events = nj.show(hog)["events"].clone();
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "preempting"),
        "{events}"
    );
}

#[test]
fn a_task_that_is_not_preemptible_is_never_preempted() {
    let mut nj = world(
        "[plugins]\nchain = [\"fair-share\"]\npreempt_min_runtime = \"100ms\"\n[plugin.fair-share.config]\npreempt_below = 0.5\n",
    );
    nj.start();
    let hog = nj.submit(&["--project", "hog", "--", "sleep", "1.5"]);
    nj.until("hog running", || nj.show(hog)["task"]["state"] == "running");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let starved = nj.submit(&["--project", "starved", "--", "true"]);
    assert_eq!(nj.wait(hog), 0);
    assert_eq!(nj.wait(starved), 0);
    assert_eq!(
        nj.show(hog)["runs"].as_array().unwrap().len(),
        1,
        "one run, not preempted"
    );
}
