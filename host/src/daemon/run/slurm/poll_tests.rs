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
            && t0.elapsed() < Duration::from_secs(5)
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

/// A poller of no daemon, its batches under `dir`.
fn poller(dir: &std::path::Path) -> Poller {
    Poller {
        daemon: Weak::new(),
        jobs: Arc::default(),
        elements: Arc::default(),
        batches: dir.join("batches"),
        tag: "nightjar:t".into(),
        every: Duration::from_secs(1),
    }
}

/// Leaves in the run folder `dir` the status of a task that exited `code`.
fn exited(dir: &std::path::Path, code: i32) {
    let status = files::RunStatus {
        started_at: 1,
        finished_at: 3,
        exit_code: Some(code),
        signal: None,
        ended_by: files::EndedBy::Exited,
        message: None,
        log_dropped: 0,
        log_error: None,
        detected: None,
    };
    files::write_atomic(dir, files::STATUS, &status).unwrap();
}

#[test]
fn a_job_one_listing_missed_keeps_its_whole_patience_for_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let poller = poller(dir.path());
    lock(&poller.jobs).insert(7, Job::new(JobId::one(70), dir.path().to_path_buf(), None));
    let listed = |state: &str| {
        vec![cli::Listed {
            run: 7,
            job: 70,
            index: None,
            state: state.into(),
            reason: "None".into(),
            nodes: "n1".into(),
        }]
    };
    // Listed before its sbatch returned: not in the listing.
    assert!(poller.ended(&[], 1).is_empty());
    assert!(poller.ended(&listed("RUNNING"), 2).is_empty());
    // Over, its status not yet seen through the shared folder's cache.
    assert!(
        poller.ended(&listed("COMPLETED"), 3).is_empty(),
        "one poll without its status is not yet a lost run"
    );
    exited(dir.path(), 0);
    let over = poller.ended(&listed("COMPLETED"), 4);
    assert_eq!(over.len(), 1);
    assert_eq!(over[0].1.class, crate::store::RunClass::Ok);
}

#[test]
fn a_hand_scancel_whose_shell_exited_143_is_a_cancel_not_the_tasks_failure() {
    let dir = tempfile::tempdir().unwrap();
    let poller = poller(dir.path());
    let id = JobId {
        job: 44,
        index: Some(1),
    };
    lock(&poller.jobs).insert(7, Job::new(id, dir.path().to_path_buf(), Some((5, 1))));
    // `sh -c '...; sleep 300'`: SLURM's SIGTERM ends the shell with 143.
    exited(dir.path(), 143);
    let listed = vec![cli::Listed {
        run: 7,
        job: 44,
        index: Some(1),
        state: "CANCELLED".into(),
        reason: "None".into(),
        nodes: "n1".into(),
    }];
    let over = poller.ended(&listed, 4);
    assert_eq!(over.len(), 1);
    assert_eq!(over[0].1.class, RunClass::Cancelled);
    let message = over[0].1.message.clone().unwrap_or_default();
    assert!(
        message.contains("SLURM job 44_1 was cancelled outside nightjar"),
        "{message}"
    );
    // One nightjar asked for keeps the supervisor's own account.
    lock(&poller.jobs).insert(8, {
        let mut j = Job::new(JobId::one(45), dir.path().to_path_buf(), None);
        j.asked = true;
        j
    });
    let listed = vec![cli::Listed {
        run: 8,
        job: 45,
        index: None,
        ..listed[0].clone()
    }];
    let over = poller.ended(&listed, 5);
    let mine = over.iter().find(|(r, _)| *r == 8).expect("run 8 over");
    assert_eq!(mine.1.class, RunClass::AppError, "{:?}", mine.1);
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
