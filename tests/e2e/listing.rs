//! `nightjar ls` of a long queue: a screenful by default, the rest counted.

use crate::harness::Nj;

/// A task file of `n` held tasks named `t0`, `t1`, ... (one submit).
fn many(nj: &Nj, n: usize) -> String {
    let mut file = String::new();
    for i in 0..n {
        file.push_str(&format!(
            "[[task]]\nname = \"t{i}\"\ncommand = \"true\"\nhold = true\n"
        ));
    }
    let path = nj.path("work").join("many.toml");
    std::fs::write(&path, file).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn ls_shows_100_rows_by_default_and_says_on_stderr_how_many_it_left_out() {
    let mut nj = Nj::new("slots = 1");
    nj.start();
    let file = many(&nj, 105);
    nj.ok(&["submit", &file]);
    let out = nj.cli(&["ls"]);
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    let note = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        table.lines().count(),
        1 + 100,
        "header and 100 rows:\n{table}"
    );
    assert!(table.contains(" t0 ") && table.contains(" t99 "), "{table}");
    assert!(!table.contains(" t100 "), "the newest waiting are left out");
    assert!(
        note.contains("100 of 105 rows shown; not shown: 5 held") && note.contains("--limit 0"),
        "{note}"
    );
    let all = nj.cli(&["ls", "--limit", "0"]);
    assert_eq!(
        String::from_utf8_lossy(&all.stdout).lines().count(),
        1 + 105
    );
    assert!(all.stderr.is_empty(), "nothing left out, nothing said");
    let json = nj.json(&["ls"]);
    assert_eq!(
        json.as_array().unwrap().len(),
        105,
        "--json lists every row"
    );
    let two = nj.json(&["ls", "--limit", "2"]);
    assert_eq!(two.as_array().unwrap().len(), 2);
}

#[test]
fn a_limit_keeps_the_running_task_ahead_of_older_ended_and_newer_waiting_ones() {
    let mut nj = Nj::new("slots = 1");
    nj.start();
    let done = nj.submit(&["--name", "done", "--", "true"]);
    assert_eq!(nj.wait(done), 0);
    let runs = nj.submit(&["--name", "runs", "--", "sleep", "30"]);
    nj.until("the sleeper runs", || {
        nj.show(runs)["task"]["state"] == "running"
    });
    let file = many(&nj, 3);
    nj.ok(&["submit", &file]);
    let out = nj.cli(&["ls", "--limit", "2"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(names, ["runs", "t0"], "{table}");
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(note.contains("2 of 5 rows shown"), "{note}");
    assert!(
        note.contains("2 held") && note.contains("1 succeeded"),
        "{note}"
    );
    nj.ok(&["cancel", &runs.to_string()]);
}

#[test]
fn a_note_that_stderr_cannot_take_does_not_fail_the_listing() {
    let mut nj = Nj::new("slots = 1");
    nj.start();
    let file = many(&nj, 3);
    nj.ok(&["submit", &file]);
    // `2>/dev/full`: the table was written; the note under it is lost,
    // which is no reason to fail (eprintln! panicked: status 101).
    let out = std::process::Command::new(crate::harness::BIN)
        .arg("--config")
        .arg(&nj.config)
        .args(["ls", "--limit", "2"])
        .stderr(crate::harness::dev_full())
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1 + 2);
}
