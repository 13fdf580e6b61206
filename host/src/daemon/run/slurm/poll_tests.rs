//! The poller's and adoption's parts that need no cluster.

use super::*;

#[test]
fn only_the_daemons_own_processes_count_as_its_sbatch_in_flight() {
    use std::os::unix::process::CommandExt;
    let arg = format!("--comment=nightjar:test-{}:run:1", std::process::id());
    let start = |uid: Option<u32>| {
        // `read`, a builtin, waits on the pipe without a child (one
        // forked but not yet exec'd would carry the argument too).
        let mut c = std::process::Command::new("sh");
        c.args(["-c", "read x", "sh", &arg])
            .stdin(std::process::Stdio::piped());
        if let Some(u) = uid {
            c.uid(u).gid(u);
        }
        let child = c.spawn().expect("sh");
        // spawn returns once exec began, maybe before the new argument
        // list is in place.
        let cmdline = format!("/proc/{}/cmdline", child.id());
        let t0 = Instant::now();
        while !std::fs::read(&cmdline).is_ok_and(|c| c.ends_with(format!("{arg}\0").as_bytes()))
            && t0.elapsed() < Duration::from_secs(30)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        child
    };
    let mut mine = start(None);
    assert!(in_flight(&arg));
    let _ = mine.kill();
    let _ = mine.wait();
    assert!(!in_flight(&arg));
    if crate::users::euid() == 0 {
        // Anyone can start a process with the run's comment in its arguments.
        let mut theirs = start(Some(65534));
        assert!(
            !in_flight(&arg),
            "another user's process is no sbatch of ours"
        );
        let _ = theirs.kill();
        let _ = theirs.wait();
    }
}

#[test]
fn the_sweep_removes_only_batches_none_in_progress_whose_runs_all_ended() {
    let shared = tempfile::tempdir().unwrap();
    let batches = shared.path().join("batches");
    let run = |n: &str, ended: bool| {
        let dir = shared.path().join("runs").join(n);
        std::fs::create_dir_all(&dir).unwrap();
        if ended {
            std::fs::write(dir.join(files::STATUS), "{}").unwrap();
        }
        dir
    };
    let batch = |b: &str, runs: &[&std::path::Path]| {
        let dir = batches.join(b);
        std::fs::create_dir_all(&dir).unwrap();
        let index: String = runs.iter().map(|r| format!("{}\n", r.display())).collect();
        std::fs::write(dir.join("index"), index).unwrap();
        dir
    };
    // Ended while no daemon watched: removed.
    let (a, b) = (run("1", true), run("2", true));
    let over = batch("1", &[&a, &b]);
    // One element still waiting in SLURM, not adopted yet: kept.
    let (c, d) = (run("3", true), run("4", false));
    let waiting = batch("3", &[&c, &d]);
    // In progress in this daemon: kept, whatever its folders say.
    let (e, f) = (run("5", true), run("6", true));
    let live = batch("5", &[&e, &f]);
    // Not a batch's folder: left alone.
    std::fs::create_dir_all(batches.join("notes")).unwrap();
    let elements = Mutex::new(HashMap::from([((5, 0), 5)]));
    assert_eq!(sweep(&batches, &elements), 1);
    assert!(!over.exists() && waiting.exists() && live.exists());
    assert!(batches.join("notes").exists());
    assert_eq!(sweep(&shared.path().join("none"), &elements), 0);
}
