//! `nightjar wait`'s live line: drawn on a terminal (a real pseudo-terminal,
//! from util-linux's `script`), with the counts and an expected end from
//! the tasks' estimates; never when the output is a pipe or with `--json`,
//! whose output stays exactly the results.

use std::process::Command;

use crate::harness::{BIN, Nj};

/// What a terminal shows while `nightjar ARGS` runs on one: stdout and
/// stderr together, as `script` records them; and the exit status.
fn on_a_terminal(nj: &Nj, args: &[&str]) -> (String, i32) {
    let mut line = format!("{BIN} --config {}", nj.config.display());
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    let out = Command::new("script")
        .args(["--quiet", "--return", "--command", &line, "/dev/null"])
        // A width indicatif can draw the whole line in.
        .env("COLUMNS", "200")
        .output()
        .expect("util-linux's `script` runs (bsdutils)");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn wait_on_a_terminal_shows_a_live_line_with_counts_and_an_eta_and_none_in_a_pipe() {
    let mut nj = Nj::new("slots = 1");
    nj.start();
    // One slot: one runs while the others wait; the timeout is each task's
    // estimate, so the forecast has an end for every one.
    let ids: Vec<String> = (0..3)
        .map(|_| {
            nj.submit(&["--timeout", "10m", "--", "sleep", "2"])
                .to_string()
        })
        .collect();
    let mut args = vec!["wait"];
    args.extend(ids.iter().map(String::as_str));
    let (screen, status) = on_a_terminal(&nj, &args);
    assert_eq!(status, 0, "{screen}");
    for part in ["/3 ended", "1 running", "waiting", "ETA in "] {
        assert!(
            screen.contains(part),
            "the live line shows {part:?}: {screen:?}"
        );
    }
    assert!(
        !screen.contains("0/0"),
        "nothing is drawn before the daemon's first answer: {screen:?}"
    );
    // One line, redrawn in place: never wider than the terminal, so it
    // never wraps (a wrapped line moves the cursor up to redraw).
    assert!(!screen.contains("\u{1b}[1A"), "{screen:?}");
    // The results are printed after the line is cleared (the terminal ends
    // each of their lines with \r\n).
    let tail = screen.rsplit("\u{1b}[2K").next().unwrap_or_default();
    assert!(!tail.contains("ended"), "{tail:?}");
    assert!(
        tail.contains(&format!("{}\tsucceeded (exit 0)", ids[2])),
        "{screen:?}"
    );

    // The same wait, ended: a pipe gets the results alone.
    let piped = nj.cli(&args);
    assert!(piped.status.success());
    let (out, err) = (
        String::from_utf8_lossy(&piped.stdout),
        String::from_utf8_lossy(&piped.stderr),
    );
    let expected: String = ids
        .iter()
        .map(|id| format!("{id}\tsucceeded (exit 0)\n"))
        .collect();
    assert_eq!(out, expected);
    assert_eq!(err, "", "no live line on a pipe");

    // `--json` on a terminal: the JSON alone.
    let mut json_args = vec!["--json"];
    json_args.extend_from_slice(&args);
    let (screen, status) = on_a_terminal(&nj, &json_args);
    assert_eq!(status, 0, "{screen}");
    assert!(
        !screen.contains("ended"),
        "no live line with --json: {screen}"
    );
    let v: serde_json::Value = serde_json::from_str(screen.trim()).expect("only JSON");
    assert_eq!(v.as_array().map(Vec::len), Some(3), "{v}");
}

#[test]
fn wait_progress_counts_a_sweeps_members_once_each_by_state() {
    let mut nj = Nj::new("slots = 1");
    nj.start();
    let file = nj.path("files").join("sweep.toml");
    std::fs::write(
        &file,
        "name = \"s\"\ncommand = \"sleep 30\"\n[sweep]\nn = [1, 2, 3]\n",
    )
    .unwrap();
    let sweep = nj.submit(&[file.to_str().unwrap()]);
    nj.until("one member runs", || nj.running() == 1);
    // The sweep named twice, and a member of it: each member once.
    let members = nj.show(sweep)["members"].as_array().unwrap().clone();
    let member = members[0]["id"].as_i64().unwrap();
    let counts = nj.request(serde_json::json!({
        "verb": "wait-progress", "ids": [sweep, sweep, member]
    }));
    let mut got: Vec<(String, u64)> = counts["ok"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["state"].as_str().unwrap().to_string(),
                c["count"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [("queued".to_string(), 2), ("running".to_string(), 1)],
        "{counts}"
    );
    nj.ok(&["cancel", &sweep.to_string()]);
}
