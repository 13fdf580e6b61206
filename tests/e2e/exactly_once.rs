//! A result is acknowledged only after it is committed: when the store
//! cannot record a run's end (the database locked past its busy timeout, the
//! state dir's file system full), the supervisor keeps the status and the
//! run is recorded once, with the right exit code, after the obstacle goes.

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use crate::harness::Nj;

/// The run rows of task `id`.
fn runs(nj: &Nj, id: i64) -> Vec<serde_json::Value> {
    nj.show(id)["runs"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_run_ending_while_the_database_is_locked_is_recorded_once_afterwards() {
    let mut nj = Nj::new("slots = 1");
    nj.start();
    let id = nj.submit(&["--", "sh", "-c", "sleep 1; exit 3"]);
    nj.until("running", || nj.show(id)["task"]["state"] == "running");
    // Another connection holds the write lock past the daemon's 5 s busy
    // timeout: until the daemon says it could not record the end (however
    // late the task ends on a busy machine), then 2 s more.
    let db = rusqlite::Connection::open(nj.state.join("nightjar.db")).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    nj.until_slow("the end is refused while the lock is held", || {
        nj.daemon_log().contains("cannot record its end yet")
    });
    std::thread::sleep(Duration::from_secs(2));
    db.execute_batch("COMMIT").unwrap();
    drop(db);
    assert_eq!(nj.wait(id), 3, "the exit code survives");
    let r = runs(&nj, id);
    assert_eq!(r.len(), 1, "recorded once, never run again: {r:?}");
    assert_eq!(r[0]["exit_code"], 3);
}

/// A tmpfs of `mib` MiB mounted on `dir` for the test's life.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &std::path::Path, mib: u32) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m,mode=0700")])
            .arg("tmpfs")
            .arg(dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(
            ok,
            "this test mounts a small tmpfs as its full disk: run it as root (CI does)"
        );
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_run_ending_on_a_full_disk_is_recorded_once_after_space_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("full");
    let _fs = Tmpfs::mount(&state, 16);
    // A 16 MiB state dir is far below the default `min_free` gate: off here,
    // so the run starts and the disk can fill under it.
    let mut nj = Nj::new(&format!(
        "slots = 1\nstate_dir = \"{}\"\n[retention]\nmin_free = \"0B\"",
        state.display()
    ));
    // The harness wrote its own state_dir first; this world's is the tmpfs.
    let cfg = std::fs::read_to_string(&nj.config).unwrap();
    let cfg: String = cfg
        .lines()
        .filter(|l| !l.starts_with("state_dir") || l.contains("/full"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&nj.config, cfg).unwrap();
    nj.state = state.clone();
    nj.start();
    // The task ends only when the test opens its gate (outside the full
    // file system), once the disk is full: a `sleep 2` could end before the
    // disk was filled, or the daemon try to record it only after a fixed
    // wait on a loaded machine.
    let gate = nj.path("marks").join("gate");
    let script = format!(
        "while [ ! -e {} ]; do sleep 0.05; done; exit 4",
        gate.display()
    );
    let id = nj.submit(&["--", "sh", "-c", &script]);
    nj.until("running", || nj.show(id)["task"]["state"] == "running");
    // Fill the file system to the last byte.
    let filler = state.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 1 << 16];
    while f.write_all(&block).is_ok() {}
    let _ = f.write_all(&[0u8; 512]);
    drop(f);
    // The run ends while nothing can be written: until the daemon says it
    // could not record the end (however late that is on a busy machine).
    std::fs::write(&gate, "").unwrap();
    nj.until_slow("the store refuses the end while full", || {
        nj.daemon_log().contains("cannot record its end yet")
    });
    std::fs::remove_file(&filler).unwrap();
    assert_eq!(nj.wait(id), 4, "the exit code survives the full disk");
    let r = runs(&nj, id);
    assert_eq!(r.len(), 1, "recorded once, never run again: {r:?}");
    assert_eq!(r[0]["exit_code"], 4);
}

#[test]
fn a_task_that_kills_its_supervisor_is_killed_whole_and_never_run_twice() {
    let mut nj = Nj::new("slots = 1");
    nj.start();
    // A marker argument to find the task's own processes by.
    let id = nj.submit(&["--", "sh", "-c", "kill -9 $PPID; exec sleep 31.123"]);
    nj.until("the run ended", || {
        nj.show(id)["runs"][0]["state"] == "finished"
    });
    let r = runs(&nj, id);
    assert_eq!(r.len(), 1, "never started again: {r:?}");
    assert_eq!(r[0]["class"], "lost", "{r:?}");
    assert!(
        r[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("supervisor died"),
        "{r:?}"
    );
    let left = Command::new("pgrep")
        .args(["-f", "sleep 31.123"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "the task's tree was killed: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    assert_ne!(nj.show(id)["task"]["state"], "running");
}

#[test]
fn a_run_whose_lock_another_process_holds_is_not_started_and_says_why() {
    let mut nj = Nj::new("slots = 2");
    nj.start();
    let lock = nj.state.join("runs.lock");
    // A task of the same user locks the bytes of every later run in runs.lock.
    let script = format!(
        "import fcntl, os, time\nf = open({:?}, 'r+')\nfcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 1000, int(os.environ['NIGHTJAR_RUN_ID']) + 1, 0)\nopen(os.environ['MARK'], 'w').close()\ntime.sleep(20)\n",
        lock.display().to_string()
    );
    let mark = nj.path("work").join("locked");
    let holder = nj.submit(&[
        "--env",
        &format!("MARK={}", mark.display()),
        "--",
        "python3",
        "-c",
        &script,
    ]);
    nj.until("the bytes are locked", || mark.exists());
    let victim = nj.submit(&["--", "echo", "must-not-run"]);
    nj.until("the victim's run ended", || {
        nj.show(victim)["runs"][0]["state"] == "finished"
    });
    let r = runs(&nj, victim);
    assert_eq!(r[0]["class"], "app-error", "{r:?}");
    assert!(
        r[0]["message"].as_str().unwrap_or("").contains("runs.lock"),
        "says why, not `lost (host reboot?)`: {r:?}"
    );
    let out = nj.ok(&["logs", &victim.to_string()]);
    assert!(!out.contains("must-not-run"), "never started: {out}");
    nj.ok(&["cancel", &holder.to_string()]);
}
