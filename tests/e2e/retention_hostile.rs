//! Retention of local outputs against hostile output folders: with
//! `task_outputs = true` a folder is removed only when it is a real folder
//! named without `..` or links, strictly inside `output_roots`, holding
//! neither the task's workdir nor the state dir; a folder another live run
//! still uses is kept; and `nightjar gc` removing a large tree does not
//! stop the daemon answering.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{BIN, Nj};

const FAIL: &str = "echo m > \"${OUTPUT_PATH}/marker\"; exit 1";

fn failing(nj: &Nj, output: &str, workdir: Option<&Path>) -> i64 {
    let mut args = vec!["--output", output];
    let wd;
    if let Some(w) = workdir {
        wd = w.display().to_string();
        args.extend(["--workdir", wd.as_str()]);
    }
    args.extend(["--", "sh", "-c", FAIL]);
    let id = nj.submit(&args);
    assert_eq!(nj.wait(id), 1);
    id
}

fn sentinel(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let s = dir.join("sentinel");
    std::fs::write(&s, "keep").unwrap();
    s
}

#[test]
fn task_outputs_never_removes_a_folder_through_dotdot_or_a_link_nor_a_root_or_a_workdir() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("results");
    let kept = [
        sentinel(&r.join("keep")),
        sentinel(&r.join("target/out")),
        sentinel(&r.join("wd")),
        sentinel(&r),
    ];
    std::os::unix::fs::symlink(r.join("target"), r.join("vialink")).unwrap();
    let mut nj = Nj::new(&format!(
        "output_roots = [\"{}\"]\n[retention]\ntask_outputs = true\noutputs_failed = \"0s\"\nevery = \"0s\"\n",
        r.display()
    ));
    nj.start();
    let p = |s: &str| r.join(s).display().to_string();
    failing(&nj, &p("plain"), None);
    assert!(r.join("plain/marker").exists());
    failing(&nj, &p("keep/sub/.."), None);
    failing(&nj, &p("vialink/out"), None);
    failing(&nj, &r.display().to_string(), None);
    failing(&nj, ".", Some(&r.join("wd")));
    let report = nj.json(&["gc"]);
    assert!(
        !r.join("plain").exists(),
        "a plain folder inside the root goes: {report}"
    );
    for s in &kept {
        assert!(
            s.exists(),
            "{} was removed by retention\n{}",
            s.display(),
            nj.daemon_log()
        );
    }
}

#[test]
fn task_outputs_keeps_a_folder_another_live_run_still_uses() {
    let tmp = tempfile::tempdir().unwrap();
    let shared = tmp.path().join("shared");
    let mut nj =
        Nj::new("[retention]\ntask_outputs = true\noutputs_failed = \"0s\"\nevery = \"0s\"\n");
    nj.start();
    let out = shared.display().to_string();
    failing(&nj, &out, None);
    let live = nj.submit(&[
        "--output",
        &out,
        "--",
        "sh",
        "-c",
        "echo b > \"${OUTPUT_PATH}/live\"; sleep 60",
    ]);
    nj.until("the live run writing", || shared.join("live").exists());
    nj.json(&["gc"]);
    assert!(
        shared.join("live").exists(),
        "the output folder of a running task was removed for an old failed run"
    );
    nj.ok(&["cancel", &live.to_string()]);
    nj.wait(live);
}

#[test]
fn the_daemon_answers_while_gc_removes_a_deep_output_tree() {
    let mut nj = Nj::new("[retention]\noutputs_failed = \"0s\"\nevery = \"0s\"\n");
    nj.start();
    // 6000 nested folders: slow to remove, whatever the disk.
    let deep = "mkdir -p \"${OUTPUT_PATH}\" && cd \"${OUTPUT_PATH}\" || exit 2; \
                perl -e 'for (1..6000) { mkdir \"d\" or die; chdir \"d\" or die }' || exit 2; exit 1";
    let id = nj.submit(&["--", "sh", "-c", deep]);
    assert_eq!(nj.wait(id), 1);
    let spawned = Instant::now();
    let mut gc = Command::new(BIN)
        .arg("--config")
        .arg(&nj.config)
        .arg("gc")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        gc.try_wait().unwrap().is_none(),
        "gc ended before the daemon could be asked anything; make the tree deeper"
    );
    let t0 = Instant::now();
    nj.ok(&["ls"]);
    let took = t0.elapsed();
    let _ = gc.wait();
    let rest = spawned.elapsed() - took;
    assert!(
        took * 3 < rest,
        "ls waited {took:?} while gc took {:?}: the socket waits for gc",
        spawned.elapsed()
    );
}

#[test]
fn gc_removes_an_output_tree_deeper_than_any_thread_stack_and_the_daemon_lives() {
    let mut nj = Nj::new("[retention]\noutputs_failed = \"0s\"\nevery = \"0s\"\n");
    nj.start();
    // 30,000 levels: five times what overflowed a recursive removal on a
    // 2 MiB thread (6,000). That the removal takes no stack per level at
    // all is privsep's unit test (20,000 levels on a 256 KiB stack); this
    // one pins that the daemon's gc goes through it. (It had 120,000, past
    // a recursive removal on a 64 MiB thread, but making and removing them
    // took 35 s alone on this VM's disk, the e2e tier's longest test.)
    let deep = "mkdir -p \"${OUTPUT_PATH}\" && cd \"${OUTPUT_PATH}\" || exit 2; \
                perl -e 'for (1..30000) { mkdir \"d\" or die; chdir \"d\" or die }' || exit 2; exit 1";
    let id = nj.submit(&["--", "sh", "-c", deep]);
    assert_eq!(nj.wait(id), 1);
    let output = nj.show(id)["runs"][0]["run_dir"]
        .as_str()
        .map(|d| std::path::Path::new(d).join("output"))
        .expect("the run's folder");
    assert!(output.join("d/d/d").is_dir());
    nj.ok(&["gc"]);
    assert!(!output.exists(), "the deep output tree is removed");
    // The daemon is alive and answers.
    nj.ok(&["ls"]);
    let next = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(next), 0);
}

#[test]
fn a_retention_of_a_billion_years_keeps_everything() {
    let mut nj = Nj::new(
        "[retention]\nevery = \"0s\"\nended = \"1000000000y\"\nfailed = \"1000000000y\"\n\
         outputs_failed = \"1000000000y\"\n",
    );
    nj.start();
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        "mkdir -p \"${OUTPUT_PATH}\" && echo x > \"${OUTPUT_PATH}/a\"; exit 1",
    ]);
    assert_eq!(nj.wait(id), 1);
    let report = nj.json(&["gc"]);
    assert_eq!(
        (&report["tasks"], &report["outputs"]),
        (&serde_json::json!(0), &serde_json::json!(0)),
        "{report}"
    );
    assert!(
        nj.state
            .join(format!("runs/{}/output/a", nj.show(id)["runs"][0]["id"]))
            .exists()
    );
}
