//! Retention: `nightjar gc` deletes ended tasks past their age with their
//! runs, events and folders, and keeps the rest. (That the database stops
//! growing once old work is collected is the in-process tier's:
//! `host/src/api/inproc/retention.rs`.)

use std::time::Duration;

use crate::harness::Nj;

#[test]
fn gc_deletes_old_ended_tasks_with_their_folders_and_keeps_the_rest() {
    let mut nj = Nj::new("slots = 2\n[retention]\nended = \"1s\"\nfailed = \"1h\"\nevery = \"0s\"");
    nj.start();
    let ok = nj.submit(&["--", "sh", "-c", "echo out"]);
    let bad = nj.submit(&["--", "false"]);
    assert_eq!(nj.wait(ok), 0);
    assert_eq!(nj.wait(bad), 1);
    let run_dir = nj.show(ok)["runs"][0]["run_dir"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(std::path::Path::new(&run_dir).exists());
    std::thread::sleep(Duration::from_millis(1200));
    let dry = nj.ok(&["gc", "--dry-run"]);
    assert!(dry.contains("would delete 1 tasks"), "{dry}");
    assert!(
        nj.cli(&["show", &ok.to_string()]).status.success(),
        "a dry run deletes nothing"
    );
    let done = nj.json(&["gc"]);
    assert_eq!(done["tasks"], 1, "{done}");
    assert!(
        !nj.cli(&["show", &ok.to_string()]).status.success(),
        "the old success is gone"
    );
    assert!(
        !std::path::Path::new(&run_dir).exists(),
        "with its run folder"
    );
    assert_eq!(
        nj.show(bad)["task"]["state"],
        "failed",
        "a failure is kept until retention.failed"
    );
}

/// A task that writes into its output folder and its scratch, then exits `code`.
fn writer(code: i32) -> String {
    format!(
        "mkdir -p \"${{OUTPUT_PATH}}\" && echo out > \"${{OUTPUT_PATH}}/o.txt\" && echo tmp > \"${{SCRATCH}}/s.txt\"; exit {code}"
    )
}

#[test]
fn local_outputs_and_scratch_go_by_outcome_and_logs_stay() {
    let mut nj = Nj::new(
        "[retention]\nevery = \"0s\"\noutputs_failed = \"1s\"\noutputs_cancelled = \"1s\"\noutputs_succeeded = \"1h\"",
    );
    nj.start();
    let ok = nj.submit(&["--", "sh", "-c", &writer(0)]);
    let bad = nj.submit(&["--", "sh", "-c", &writer(4)]);
    let slow = nj.submit(&[
        "--",
        "sh",
        "-c",
        &format!("{}; sleep 60", writer(0).trim_end_matches("; exit 0")),
    ]);
    assert_eq!(nj.wait(ok), 0);
    assert_eq!(nj.wait(bad), 4);
    let folders = |id: i64| {
        let run = &nj.show(id)["runs"][0];
        let dir = std::path::PathBuf::from(run["run_dir"].as_str().unwrap());
        let scratch = nj.state.join("scratch").join(run["id"].to_string());
        (dir, scratch)
    };
    // (Its run may not have begun yet: a loaded machine starts it late.)
    nj.until("the slow task writes", || {
        nj.show(slow)["runs"][0]["run_dir"]
            .as_str()
            .is_some_and(|d| std::path::Path::new(d).join("output/o.txt").exists())
    });
    nj.ok(&["cancel", &slow.to_string()]);
    assert_eq!(nj.wait(slow), 130, "cancelled");
    std::thread::sleep(Duration::from_millis(1200));
    let dry = nj.json(&["gc", "--dry-run"]);
    assert_eq!(dry["outputs"], 2, "{dry}");
    assert!(
        folders(bad).0.join("output/o.txt").exists(),
        "a dry run removes nothing"
    );
    let done = nj.json(&["gc"]);
    assert_eq!(done["outputs"], 2, "{done}");
    assert!(done["outputs_bytes"].as_u64().unwrap() >= 8, "{done}");
    for id in [bad, slow] {
        let (dir, scratch) = folders(id);
        assert!(
            !dir.join("output").exists() && !scratch.exists(),
            "task {id}"
        );
        assert!(
            dir.join("stderr.log").exists()
                || dir.join("stdout.log").exists()
                || dir.join("manifest.json").exists()
        );
        assert!(nj.show(id)["runs"][0]["outputs"]["removed_at"].is_i64());
        let text = nj.ok(&["show", &id.to_string()]);
        assert!(text.contains("outputs and scratch removed"), "{text}");
    }
    // (A success's scratch goes when it ends, as before.)
    let (dir, _) = folders(ok);
    assert!(
        dir.join("output/o.txt").exists(),
        "a success's outputs are kept 1h"
    );
    assert_eq!(nj.json(&["gc"])["outputs"], 0, "nothing is removed twice");
}

#[test]
fn no_run_starts_below_min_free_and_why_names_the_file_system() {
    let mut nj = Nj::new("[retention]\nmin_free = \"1000000TiB\"");
    nj.start();
    let id = nj.submit(&["--", "true"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(nj.show(id)["task"]["state"], "queued");
    let why = nj.ok(&["why", &id.to_string()]);
    assert!(
        why.contains("no run starts: the state dir's file system")
            && why.contains(&nj.state.display().to_string())
            && why.contains("below [retention] min_free"),
        "{why}"
    );
    let ls = nj.ok(&["ls"]);
    assert!(ls.contains("no run starts"), "{ls}");
    nj.term();
    let text = std::fs::read_to_string(&nj.config).unwrap();
    std::fs::write(&nj.config, text.replace("1000000TiB", "1KiB")).unwrap();
    nj.start();
    assert_eq!(nj.wait(id), 0, "it starts once the disk has room");
}
