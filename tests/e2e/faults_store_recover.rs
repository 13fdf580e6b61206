//! What `nightjar daemon recover` refuses to believe: a run folder copied
//! under an absurd id or without its status, another daemon's database; and
//! no task that ended is opened again.

use std::time::{Duration, Instant};

use crate::faults_store::daemon_verb;
use crate::harness::Nj;

#[test]
fn recover_believes_no_absurd_folder_copy_or_foreign_database_and_reopens_no_ended_task() {
    let mut nj = Nj::new("");
    nj.start();
    let done = nj.submit(&["--attempts", "3", "--", "true"]);
    assert_eq!(nj.wait(done), 0);
    assert!(nj.term().success());
    let runs = nj.state.join("runs");
    let cp = |from: &str, to: &str| {
        let st = std::process::Command::new("cp")
            .args(["-a"])
            .arg(runs.join(from))
            .arg(runs.join(to))
            .status()
            .unwrap();
        assert!(st.success());
    };
    // A copy of a finished run under a huge id, and one under a new id without its status.
    cp("1", "9223372036854775807");
    cp("1", "7");
    std::fs::remove_file(runs.join("7/status.json")).unwrap();
    let (code, out) = daemon_verb(&nj, &["recover"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("run 9223372036854775807: its id is past"),
        "{out}"
    );
    assert!(out.contains("run 7: task 1 is succeeded already"), "{out}");
    nj.start();
    let next = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(next), 0, "ids go on: {}", nj.show(next));
    assert_eq!(nj.show(done)["task"]["state"], "succeeded");
    assert_eq!(
        nj.show(done)["runs"].as_array().unwrap().len(),
        1,
        "not run again"
    );
    assert!(nj.term().success());
    // A copy naming absurd ids: refused at start, not believed by recover (which ends).
    let ids = nj.state.join("nightjar.db.ids");
    let text = std::fs::read_to_string(&ids).unwrap();
    let store_id = text.split_whitespace().nth(2).unwrap().to_string();
    std::fs::write(
        &ids,
        format!("nightjar-ids 1 {store_id} 09000000000000000000 00000000000000000001\n"),
    )
    .unwrap();
    let (code, _) = nj.start_refused();
    assert_ne!(code, 0);
    let t0 = Instant::now();
    let (code, out) = daemon_verb(&nj, &["recover"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("not believed"), "{out}");
    assert!(t0.elapsed() < Duration::from_secs(30));
    // The copy deleted: noticed, and recover writes it again.
    std::fs::remove_file(&ids).unwrap();
    let (_, log) = nj.start_refused();
    assert!(log.contains("nightjar.db.ids is missing"), "{log}");
    assert_eq!(daemon_verb(&nj, &["recover"]).0, 0);
    // Another world's database put in its place: moved aside, rebuilt from the folders.
    let mut other = Nj::new("");
    other.start();
    for _ in 0..3 {
        let id = other.submit(&["--", "true"]);
        assert_eq!(other.wait(id), 0);
    }
    assert!(other.term().success());
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(nj.state.join(format!("nightjar.db{ext}")));
        let from = other.state.join(format!("nightjar.db{ext}"));
        if from.exists() {
            std::fs::copy(&from, nj.state.join(format!("nightjar.db{ext}"))).unwrap();
        }
    }
    let (code, out) = daemon_verb(&nj, &["recover"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("is not the one this state dir used"), "{out}");
    nj.start();
    assert_eq!(
        nj.show(done)["task"]["state"],
        "succeeded",
        "{}",
        nj.show(done)
    );
    let shown = nj.show(done)["runs"][0]["run_dir"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(shown.starts_with(nj.state.to_str().unwrap()), "{shown}");
    crate::harness::chaos_row(
        "recover: absurd folders, copies, a foreign database",
        2,
        0,
        0,
        0,
    );
}
