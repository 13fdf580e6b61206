//! `submit` as the CLI reads it: task files and the flags beside them,
//! mistakes refused rather than queued, and schedules with their zones.

use crate::harness::Nj;

#[test]
fn a_mistyped_task_file_is_refused_by_name_and_nothing_is_queued() {
    let mut nj = Nj::new("");
    nj.start();
    for args in [&["submit", "typo.toml"][..], &["submit", "--", "nope.yaml"]] {
        let out = nj.cli(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(&format!("task file {}: no such file", args[args.len() - 1])),
            "{args:?}: {err}"
        );
    }
    assert_eq!(nj.json(&["ls", "--all"]).as_array().map(Vec::len), Some(0));
}

#[test]
fn recurring_task_shows_its_next_firing_in_the_time_zone() {
    let mut nj = Nj::new("timezone = \"Asia/Shanghai\"");
    nj.start();
    let id = nj.submit(&["--schedule", "daily@03:00", "--", "true"]);
    let row = nj.show(id)["task"].clone();
    assert_eq!(row["state"], "scheduled");
    let next = row["next_fire_at"].as_i64().unwrap();
    // 03:00 in Shanghai is 19:00 UTC.
    assert_eq!((next / 1000) % 86_400, 19 * 3600);
    assert_eq!(nj.wait(id), 1, "waiting on a template is refused");
}

#[test]
fn cron_nicknames_are_accepted_and_reboot_fires_once_per_daemon_start() {
    let mut nj = Nj::new("timezone = \"UTC\"");
    nj.start();
    let daily = nj.submit(&["--schedule", "@daily", "--", "true"]);
    let next = nj.show(daily)["task"]["next_fire_at"].as_i64().unwrap();
    assert_eq!((next / 1000) % 86_400, 0, "@daily fires at midnight");
    let bad = nj.cli(&["submit", "--schedule", "@fortnightly", "--", "true"]);
    assert!(!bad.status.success(), "an unknown nickname is refused");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a cron nickname"));
    let boot = nj.submit(&["--schedule", "@reboot", "--", "true"]);
    let t = nj.show(boot)["task"].clone();
    assert_eq!(t["state"], "scheduled");
    assert!(t["next_fire_at"].is_null(), "@reboot has no time: {t}");
    assert!(
        nj.ok(&["show", &boot.to_string()])
            .contains("when the daemon next starts")
    );
    let instances = |nj: &Nj| {
        nj.json(&["ls", "--all"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["parent_id"] == boot)
            .count()
    };
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(instances(&nj), 0, "not fired at submit");
    for start in 1..=2 {
        assert!(nj.term().success());
        nj.start();
        nj.until("the @reboot instance", || instances(&nj) == start);
    }
}

#[test]
fn flags_beside_a_task_file_apply_or_are_refused_never_dropped() {
    let mut nj = Nj::new("");
    nj.start();
    let file = nj.path("files").join("t.toml");
    std::fs::write(&file, "command = \"true\"\n").unwrap();
    let f = file.to_str().unwrap();
    let id = nj.submit(&["--hold", "-f", f]);
    assert_eq!(
        nj.show(id)["task"]["state"],
        "held",
        "--hold applies to a file"
    );
    let out = nj.cli(&["submit", "--gpus", "2", "--project", "x", "-f", f]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--project, --gpus apply to `submit -- CMD`"),
        "{err}"
    );
    let all = nj.json(&["ls", "--all"]);
    assert_eq!(
        all.as_array().unwrap().len(),
        1,
        "nothing else queued: {all}"
    );
}

#[test]
fn a_schedule_read_in_another_zone_says_which() {
    let mut nj = Nj::new("timezone = \"Asia/Shanghai\"");
    nj.start();
    let id = nj.submit(&["--schedule", "daily@03:00", "--", "true"]);
    let show = |tz: &str| {
        let out = std::process::Command::new(crate::harness::BIN)
            .env("TZ", tz)
            .args([
                "--config",
                nj.config.to_str().unwrap(),
                "show",
                &id.to_string(),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let elsewhere = show("UTC");
    assert!(
        elsewhere.contains("schedule   daily@03:00 (Asia/Shanghai time)"),
        "{elsewhere}"
    );
    let next = elsewhere.lines().find(|l| l.contains("next fire")).unwrap();
    assert!(next.contains(" 03:00 Asia/Shanghai)"), "{next}");
    // Seen from the schedule's own zone, no label is needed.
    let there = show("Asia/Shanghai");
    assert!(there.contains("schedule   daily@03:00\n"), "{there}");
    assert!(!there.contains("Asia/Shanghai"), "{there}");
}

#[test]
fn a_mistyped_flag_before_the_command_is_refused_not_queued_as_the_command() {
    let mut nj = Nj::new("");
    nj.start();
    let out = nj.cli(&["submit", "--held", "--", "true"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown flag `--held`"), "{err}");
    assert_eq!(
        nj.json(&["ls", "--all"]).as_array().map(Vec::len),
        Some(0),
        "nothing queued"
    );
    // After `--` a command may start with `-`: it is the user's to name.
    let id = nj.submit(&["--", "-x"]);
    assert!(id > 0);
}
