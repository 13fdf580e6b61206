//! `nightjar daemon recover` over run folders handed to their tasks'
//! owners (SLURM with `job_user = "owner"`), each of whom can rewrite the
//! manifest in their own folder: a lost task that two users' folders each
//! claim for themselves is put back for neither.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::harness::{Nj, read};
use crate::users_harness::{Acct, users};

/// `nightjar daemon ARGS`: its exit code and what it printed.
fn daemon_verb(nj: &Nj, args: &[&str]) -> (i32, String) {
    let mut a = vec!["daemon"];
    a.extend_from_slice(args);
    let out = nj.cli(&a);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), said)
}

/// Makes the run folder `dir` claim task `task` for `who` in its manifest,
/// and hands the folder to them, as a SLURM daemon hands an owner's.
fn claim(dir: &Path, task: i64, who: &Acct) {
    let path = dir.join("manifest.json");
    let mut manifest: Value = serde_json::from_str(&read(&path)).unwrap();
    manifest["start"]["task"] = json!(task);
    manifest["start"]["spec"]["owner"] = json!({"uid": who.uid, "name": who.name});
    std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let chown = |p: &Path| {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; lchown follows no link.
        assert_eq!(unsafe { libc::lchown(c.as_ptr(), who.uid, who.gid) }, 0);
    };
    for entry in std::fs::read_dir(dir).unwrap() {
        chown(&entry.unwrap().path());
    }
    chown(dir);
}

#[test]
fn recover_puts_back_no_lost_task_that_two_users_folders_each_claim_for_themselves() {
    let u = users("recover_puts_back_no_lost_task_that_two_users_folders_each_claim");
    let mut nj = Nj::new("");
    nj.start();
    let (bobs, alices) = (nj.submit(&["--", "true"]), nj.submit(&["--", "true"]));
    let dir = |id: i64| -> PathBuf {
        assert_eq!(nj.wait(id), 0);
        PathBuf::from(
            nj.show(id)["runs"][0]["run_dir"]
                .as_str()
                .expect("run folder"),
        )
    };
    let (bob_dir, alice_dir) = (dir(bobs), dir(alices));
    assert!(nj.term().success());
    // Bob's run of his task; Alice rewrote her own run's manifest to claim
    // Bob's task as hers.
    claim(&bob_dir, bobs, &u.bob);
    claim(&alice_dir, bobs, &u.alice);
    // The database is lost.
    std::fs::write(nj.state.join("nightjar.db"), vec![0x5a; 64 * 1024]).unwrap();
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(nj.state.join(format!("nightjar.db{ext}")));
    }
    let (code, out) = daemon_verb(&nj, &["recover"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "run folders of different owners claim lost task {bobs}"
        )),
        "{out}"
    );
    assert!(out.contains("0 task(s) recreated"), "{out}");
    assert!(
        out.contains(&format!("lost: task(s) {bobs}, {alices}")),
        "both reported lost, to submit again: {out}"
    );
    nj.start();
    let ls = nj.json(&["ls", "--all"]);
    assert_eq!(
        ls.as_array().map(Vec::len),
        Some(0),
        "no task recreated as either user's: {ls}"
    );
}
