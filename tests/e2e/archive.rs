//! The archive, from a real daemon and real files: a succeeded run's
//! outputs, manifests and logs land verified under their final name; a
//! kill -9 of the daemon after each step (copy, fsync, verify, rename)
//! leaves, after a restart, exactly one complete archive; a full archive
//! file system and a missing root are failures of their own class, retried
//! until they succeed, with the local outputs kept meanwhile.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::harness::{Nj, SmallFs};

/// A task that writes two files (one in a subfolder), a link out of its
/// output folder and a FIFO, prints to both streams, and succeeds.
const WRITER: &str = "mkdir -p \"${OUTPUT_PATH}/sub\" && printf hello > \"${OUTPUT_PATH}/a.txt\" \
    && head -c 200000 /dev/urandom > \"${OUTPUT_PATH}/sub/b.bin\" \
    && ln -s /etc/passwd \"${OUTPUT_PATH}/passwd-link\" && mkfifo \"${OUTPUT_PATH}/fifo\" \
    && echo written && echo note >&2";

pub(crate) fn world(root: &Path, extra: &str) -> Nj {
    Nj::new(&format!(
        "timezone = \"UTC\"\n{extra}\n[archive]\nroot = \"{}\"\nretry = \"1s\"\nretry_max = \"2s\"\n",
        root.display()
    ))
}

pub(crate) fn run0(nj: &Nj, id: i64) -> Value {
    nj.show(id)["runs"][0].clone()
}

pub(crate) fn archive_state(nj: &Nj, id: i64) -> Value {
    run0(nj, id)["outputs"]["archive"].clone()
}

fn sha(p: &Path) -> String {
    format!("{:x}", Sha256::digest(std::fs::read(p).unwrap()))
}

/// The final folders under `root` (three levels down), sorted.
pub(crate) fn finals(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in std::fs::read_dir(root).unwrap().flatten() {
        if p.file_name() == ".partial" {
            continue;
        }
        for n in std::fs::read_dir(p.path()).unwrap().flatten() {
            for f in std::fs::read_dir(n.path()).unwrap().flatten() {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

/// Waits for task `id`'s archive to be verified or to fail a try, and
/// asserts it was verified (a failed try shows its error).
pub(crate) fn assert_archived_first_try(nj: &Nj, id: i64) {
    nj.until("the archive, or a failed try", || {
        let a = archive_state(nj, id);
        a["state"] == "done" || a["attempts"].as_u64() >= Some(1)
    });
    let a = archive_state(nj, id);
    assert_eq!(a["state"], "done", "{a}");
}

pub(crate) fn partials(root: &Path) -> usize {
    std::fs::read_dir(root.join(".partial"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Checks an archive folder against its own archive.json and the run's
/// output manifest (each file read again here).
pub(crate) fn assert_complete(dir: &Path, outputs: &Value) {
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("archive.json")).unwrap()).unwrap();
    let files = record["files"].as_array().unwrap();
    for f in files {
        let p = dir.join(f["path"].as_str().unwrap());
        assert_eq!(sha(&p), f["sha256"], "{} in {}", p.display(), dir.display());
    }
    for f in outputs["files"].as_array().unwrap() {
        let p = dir.join("outputs").join(f["path"].as_str().unwrap());
        assert_eq!(sha(&p), f["sha256"], "output {}", p.display());
    }
    for name in ["manifest.json", "outputs.json", "logs.tar.gz"] {
        assert!(dir.join(name).is_file(), "{name} in {}", dir.display());
    }
}

#[test]
fn a_succeeded_run_is_archived_verified_with_its_manifests_and_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("nas");
    std::fs::create_dir(&root).unwrap();
    let mut nj = world(&root, "");
    nj.start();
    let id = nj.submit(&[
        "--name",
        "train",
        "--project",
        "vision",
        "--",
        "sh",
        "-c",
        WRITER,
    ]);
    let failed = nj.submit(&[
        "--",
        "sh",
        "-c",
        "mkdir -p \"${OUTPUT_PATH}\"; echo x > \"${OUTPUT_PATH}/x\"; exit 3",
    ]);
    assert_eq!(nj.wait(id), 0);
    assert_eq!(nj.wait(failed), 3, "wait passes the exit code on");
    nj.until("the archive is verified", || {
        archive_state(&nj, id)["state"] == "done"
    });
    let run = run0(&nj, id);
    let outputs = &run["outputs"]["manifest"];
    let listed: Vec<&str> = outputs["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        vec!["a.txt", "sub/b.bin"],
        "links and FIFOs are not outputs"
    );
    assert_eq!(
        outputs["files"][0]["sha256"],
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    );
    let all = finals(&root);
    assert_eq!(all.len(), 1, "{all:?}");
    let dir = &all[0];
    let rel = dir.strip_prefix(&root).unwrap().display().to_string();
    let date = chrono_date(&run);
    assert_eq!(rel, format!("vision/train/{date}_{id}_{}", run["id"]));
    assert_eq!(
        run["outputs"]["archive"]["path"].as_str(),
        Some(dir.to_str().unwrap())
    );
    assert_complete(dir, outputs);
    assert!(!dir.join("outputs/passwd-link").exists() && !dir.join("outputs/fifo").exists());
    assert_eq!(partials(&root), 0, "nothing left half-built");
    // The logs, packed as the labs' scripts do.
    let unpacked = tmp.path().join("logs");
    std::fs::create_dir(&unpacked).unwrap();
    let tar = Command::new("tar")
        .arg("-xzf")
        .arg(dir.join("logs.tar.gz"))
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(tar.success());
    assert_eq!(
        std::fs::read_to_string(unpacked.join("stdout.log")).unwrap(),
        "written\n"
    );
    assert_eq!(
        std::fs::read_to_string(unpacked.join("stderr.log")).unwrap(),
        "note\n"
    );
    // Archived: the local outputs go at once (`outputs_archived` = 0s); the logs stay.
    let text = nj.ok(&["show", &id.to_string()]);
    assert!(
        text.contains(&format!("archived {}", dir.display())),
        "{text}"
    );
    nj.until("the local outputs are removed", || {
        run0(&nj, id)["outputs"]["removed_at"].is_i64()
    });
    let run_dir = PathBuf::from(run["run_dir"].as_str().unwrap());
    assert!(!run_dir.join("output").exists() && run_dir.join("stdout.log").exists());
    // A failed run is not archived, and its outputs stay (7 days by default).
    assert!(archive_state(&nj, failed).is_null());
    let failed_dir = PathBuf::from(run0(&nj, failed)["run_dir"].as_str().unwrap());
    assert!(failed_dir.join("output/x").exists());
}

/// The run's end date as the archive names it (the tests' daemons use UTC).
pub(crate) fn chrono_date(run: &Value) -> String {
    let ms = run["finished_at"].as_i64().unwrap();
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{}", ms / 1000), "+%Y-%m-%d"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_kill_9_after_each_archive_step_leaves_exactly_one_complete_archive() {
    for step in ["copy", "fsync", "verify", "rename"] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("nas");
        std::fs::create_dir(&root).unwrap();
        let mut nj = world(&root, "");
        nj.env
            .push(("NIGHTJAR_TEST_ARCHIVE_PAUSE".into(), step.into()));
        nj.start();
        let id = nj.submit(&["--name", "train", "--", "sh", "-c", WRITER]);
        assert_eq!(nj.wait(id), 0, "{step}");
        let paused = nj.state.join("archive-paused");
        nj.until(&format!("the archive to pause after {step}"), || {
            paused.exists()
        });
        nj.kill9();
        let after_kill = finals(&root);
        if step == "rename" {
            assert_eq!(after_kill.len(), 1, "renamed before the kill");
        } else {
            assert!(
                after_kill.is_empty(),
                "{step}: nothing under a final name: {after_kill:?}"
            );
        }
        nj.env.clear();
        std::fs::remove_file(&paused).unwrap();
        nj.start();
        nj.until(&format!("the archive after a kill at {step}"), || {
            archive_state(&nj, id)["state"] == "done"
        });
        let all = finals(&root);
        assert_eq!(all.len(), 1, "{step}: exactly one archive: {all:?}");
        assert_complete(&all[0], &run0(&nj, id)["outputs"]["manifest"]);
        assert_eq!(partials(&root), 0, "{step}: the interrupted try is gone");
        assert_eq!(
            archive_state(&nj, id)["path"].as_str(),
            Some(all[0].to_str().unwrap()),
            "{step}"
        );
    }
}

#[test]
fn a_missing_root_then_a_changed_output_are_failures_of_their_own_class() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("nas");
    let mut nj = world(&root, "[retention]\nevery = \"0s\"\nended = \"1s\"\n");
    nj.start();
    let id = nj.submit(&["--", "sh", "-c", WRITER]);
    assert_eq!(nj.wait(id), 0);
    nj.until("a failed try", || {
        archive_state(&nj, id)["attempts"].as_u64() >= Some(1)
    });
    let a = archive_state(&nj, id);
    assert_eq!(a["state"], "pending");
    assert_eq!(a["failure"], "unreachable", "{a}");
    assert!(
        a["error"].as_str().unwrap().contains("is the NAS mounted"),
        "{a}"
    );
    assert!(!root.exists(), "nightjar never creates the root");
    let text = nj.ok(&["show", &id.to_string()]);
    assert!(
        text.contains("not archived yet") && text.contains("local outputs are kept"),
        "{text}"
    );
    // Notifiers hear of the first failure once, not of every retry.
    nj.until("a second failed try", || {
        archive_state(&nj, id)["attempts"].as_u64() >= Some(2)
    });
    let told = notified(&nj, "archive-failed");
    assert_eq!(told, 1, "one archive-failed in the outbox, got {told}");
    // Past `ended`, gc still keeps a task whose archive is not verified.
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(
        nj.json(&["gc"])["tasks"],
        0,
        "the run folder holds the only copy"
    );
    // Someone edits an output before the NAS comes back.
    let run_dir = PathBuf::from(run0(&nj, id)["run_dir"].as_str().unwrap());
    std::fs::write(run_dir.join("output/a.txt"), "edited").unwrap();
    std::fs::create_dir(&root).unwrap();
    nj.until("a mismatch", || {
        archive_state(&nj, id)["failure"] == "mismatch"
    });
    let e = archive_state(&nj, id)["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(e.contains("a.txt changed since the run ended"), "{e}");
    assert!(finals(&root).is_empty() && partials(&root) == 0);
    // Put back, and the next try is verified.
    std::fs::write(run_dir.join("output/a.txt"), "hello").unwrap();
    nj.until("the archive", || archive_state(&nj, id)["state"] == "done");
    let events = nj.show(id)["events"].clone();
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "archive-failed"),
        "{events}"
    );
}

#[test]
fn a_full_archive_file_system_is_retried_and_the_outputs_kept_until_it_has_room() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("nas");
    std::fs::create_dir(&root).unwrap();
    let fs = match SmallFs::mount(&root, "1m") {
        Ok(fs) => fs,
        Err(why) => crate::harness::needs("a tmpfs of its own (root, to mount it)", why),
    };
    let mut nj = world(&root, "");
    nj.start();
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        "head -c 3000000 /dev/urandom > \"${OUTPUT_PATH}/big.bin\"",
    ]);
    assert_eq!(nj.wait(id), 0);
    nj.until("a failed try", || {
        archive_state(&nj, id)["failure"] == "full"
    });
    let run_dir = PathBuf::from(run0(&nj, id)["run_dir"].as_str().unwrap());
    assert!(
        run_dir.join("output/big.bin").exists(),
        "the local output is kept"
    );
    nj.until("the partial copy cleaned away", || partials(&root) == 0);
    assert!(finals(&root).is_empty());
    fs.resize("16m");
    nj.until("the archive once there is room", || {
        archive_state(&nj, id)["state"] == "done"
    });
    assert!(archive_state(&nj, id)["attempts"].as_u64().unwrap() >= 2);
    let all = finals(&root);
    assert_eq!(all.len(), 1);
    assert_complete(&all[0], &run0(&nj, id)["outputs"]["manifest"]);
}

/// How many outbox events of `kind` the daemon wrote (read from its database).
fn notified(nj: &Nj, kind: &str) -> i64 {
    let db = rusqlite::Connection::open(nj.state.join("nightjar.db")).unwrap();
    db.query_row("SELECT COUNT(*) FROM outbox WHERE kind = ?1", [kind], |r| {
        r.get(0)
    })
    .unwrap()
}
