//! `nightjar estimate`, `submit --dry-run` and the expected start `why`,
//! `show` and `ls --wide` print, from the CLI against a real daemon on
//! simulated GPUs: the words and exit statuses a user sees. (That the
//! forecast is what then happens is the in-process tier's:
//! `host/src/api/inproc/forecast.rs`.)

use crate::harness::Nj;

#[test]
fn estimate_dry_run_why_show_and_ls_wide_say_when_a_waiting_task_starts() {
    let mut nj = Nj::new(
        "slots = 8\n[plugins]\nchain = []\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n",
    );
    nj.start();
    let big = nj.submit(&[
        "--gpus",
        "2",
        "--timeout",
        "1h",
        "--name",
        "big",
        "--",
        "sleep",
        "600",
    ]);
    nj.until_slow("the big task to start", || {
        nj.show(big)["runs"][0]["started_at"].as_i64().is_some()
    });
    let started = nj.show(big)["runs"][0]["started_at"].as_i64().unwrap();
    let next = nj.submit(&[
        "--gpus",
        "1",
        "--timeout",
        "30m",
        "--name",
        "next",
        "--",
        "true",
    ]);
    let blind = nj.submit(&["--gpus", "1", "--name", "blind", "--", "true"]);

    let one = nj.json(&["estimate", &next.to_string()]);
    assert_eq!(
        one["tasks"][0]["start"].as_i64(),
        Some(started + 3_600_000),
        "{one}"
    );
    assert_eq!(
        one["tasks"][0]["end"].as_i64(),
        Some(started + 5_400_000),
        "{one}"
    );
    let text = nj.ok(&["estimate", &next.to_string()]);
    for words in [
        "expected start",
        "runtime 30m00s (timeout)",
        "on GPUs        0",
        "simulated: built-in order",
    ] {
        assert!(text.contains(words), "{words:?} in:\n{text}");
    }
    let table = nj.ok(&["estimate"]);
    let header = table.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("ID") && header.contains("ETA"),
        "{table}"
    );
    let blind_row = table
        .lines()
        .find(|l| l.starts_with(&format!("{blind} ")))
        .unwrap_or_else(|| panic!("a row for {blind}:\n{table}"));
    assert!(blind_row.contains("no runtime estimate"), "{blind_row}");

    let why = nj.ok(&["why", &next.to_string()]);
    assert!(
        why.lines()
            .last()
            .unwrap_or_default()
            .starts_with("expected start"),
        "{why}"
    );
    assert!(
        nj.ok(&["show", &next.to_string()])
            .contains("  forecast   expected start")
    );
    let wide = nj.ok(&["ls", "--wide"]);
    assert!(
        wide.lines().next().unwrap_or_default().contains(" ETA "),
        "{wide}"
    );
    assert!(
        wide.lines()
            .any(|l| l.starts_with(&format!("{next} ")) && l.contains(" in 5")),
        "next starts in about 59 minutes:\n{wide}"
    );

    let before = nj.json(&["ls"]).as_array().map(Vec::len);
    let dry = nj.ok(&[
        "submit",
        "--dry-run",
        "--gpus",
        "1",
        "--timeout",
        "10m",
        "--name",
        "try",
        "--",
        "true",
    ]);
    assert!(dry.contains("task try (not queued: --dry-run)"), "{dry}");
    assert_eq!(
        nj.json(&["ls"]).as_array().map(Vec::len),
        before,
        "nothing queued"
    );
    // Refused as a submission would be: this machine has 2 GPUs.
    let huge = nj.cli(&["submit", "--dry-run", "--gpus", "9", "--", "true"]);
    assert_eq!(huge.status.code(), Some(1), "{huge:?}");
    assert!(
        String::from_utf8_lossy(&huge.stderr).contains("not forecast"),
        "{huge:?}"
    );
    let missing = nj.cli(&["estimate", "999999"]);
    assert_eq!(missing.status.code(), Some(4), "no such task: {missing:?}");
}
