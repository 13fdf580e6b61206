//! The SLURM executor's crash and fault cases on the real one-node
//! cluster (`slurm.rs` has the cluster and the helpers): the daemon killed
//! while jobs run and while `sbatch` is on its way, slurmctld stopped, a
//! node failing under a job, and another user's job carrying a run's
//! comment. Each counts what ran, and how often.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::cluster::{
    CONTROLLER, cluster, executor, job_field, job_of, jobs_like, shared_cluster, slurm, world,
    wrapped_sbatch,
};
use crate::harness::{Nj, read};

#[test]
fn a_daemon_killed_while_jobs_run_adopts_them_and_records_each_end_once() {
    let _cluster = shared_cluster();
    let mut nj = world("");
    let marks = nj.path("marks");
    let ids: Vec<i64> = (0..3)
        .map(|i| {
            let script = format!("echo run >> {}/t{i}; sleep 3; exit {i}", marks.display());
            nj.submit(&["--", "sh", "-c", &script])
        })
        .collect();
    let jobs: Vec<String> = ids.iter().map(|&id| job_of(&nj, id)).collect();
    nj.until("all three run in SLURM", || {
        jobs.iter()
            .all(|j| job_field(j, "JobState").as_deref() == Some("RUNNING"))
    });
    nj.kill9();
    nj.start();
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(nj.wait(id), i as i32, "{}", nj.daemon_log());
        let show = nj.show(id);
        assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
        assert_eq!(read(&marks.join(format!("t{i}"))), "run\n", "t{i} ran once");
    }
    let comments = jobs_like(&jobs[0]);
    assert_eq!(comments.len(), 3, "one job per task: {comments:?}");
    crate::harness::chaos_row("daemon kill -9 while SLURM jobs run", 3, 0, 0, 0);
}

/// An `sbatch` that says it began (its pid, written whole: the test reads
/// it as soon as the file is there), then waits for the test's word (the
/// file `go`) before it hands the job to SLURM.
pub(crate) fn slow_sbatch(nj: &Nj) -> (String, std::path::PathBuf) {
    wrapped_sbatch(nj, |g| {
        format!(
            "echo $$ > {g}/pid.tmp && mv {g}/pid.tmp {g}/pid\nwhile [ ! -e {g}/go ]; do sleep 0.05; done",
            g = g.display()
        )
    })
}

/// Starts `nj`'s daemon on the cluster with `path` (the slow sbatch's
/// folder first) and submits a task that marks each run in `marks/m`;
/// returns once its sbatch began. The task's id and the marks folder.
fn submit_through(nj: &mut Nj, path: String, gate: &Path) -> (i64, std::path::PathBuf) {
    let shared = nj.path("shared");
    nj.set_config(&executor(&shared));
    nj.env.push(("SLURM_CONF".into(), cluster().into()));
    nj.env.push(("PATH".into(), path));
    nj.start();
    let marks = nj.path("marks");
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        &format!("echo run >> {}/m", marks.display()),
    ]);
    nj.until("sbatch began", || gate.join("pid").exists());
    (id, marks)
}

/// Kills the daemon (kill -9) while its sbatch waits at the slow sbatch's
/// `gate`; then either kills that sbatch too, before anything reached
/// SLURM (what it would submit must be given back and run once), or lets
/// it go on 2 s later, while the next daemon starts (which must wait for
/// it and adopt what it lands, not submit again).
pub(crate) fn kill_in_sbatch(nj: &mut Nj, gate: &Path, and_sbatch_too: bool) {
    nj.kill9();
    let sbatch: i32 = read(&gate.join("pid"))
        .trim()
        .parse()
        .expect("sbatch's pid");
    if and_sbatch_too {
        crate::harness::unsafe_kill(sbatch, libc::SIGKILL);
        std::fs::write(gate.join("go"), "").unwrap();
    } else {
        let go = gate.join("go");
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            std::fs::write(go, "").unwrap();
        });
    }
}

fn killed_in_sbatch(and_sbatch_too: bool) {
    let mut nj = Nj::new("");
    let (path, gate) = slow_sbatch(&nj);
    let (id, marks) = submit_through(&mut nj, path, &gate);
    kill_in_sbatch(&mut nj, &gate, and_sbatch_too);
    nj.start();
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    nj.until("its end is recorded", || {
        nj.show(id)["task"]["state"] == "succeeded"
    });
    assert_eq!(read(&marks.join("m")), "run\n", "it ran exactly once");
    let comments = jobs_like(&job_of(&nj, id));
    assert_eq!(comments.len(), 1, "one job for the task: {comments:?}");
}

#[test]
fn a_daemon_killed_before_sbatch_reached_slurm_gives_the_run_back_and_it_runs_once() {
    let _cluster = shared_cluster();
    killed_in_sbatch(true);
    crate::harness::chaos_row(
        "daemon and sbatch kill -9 before the job reached SLURM",
        1,
        0,
        0,
        0,
    );
}

#[test]
fn a_daemon_killed_while_sbatch_is_in_flight_adopts_the_job_it_lands() {
    let _cluster = shared_cluster();
    killed_in_sbatch(false);
    crate::harness::chaos_row("daemon kill -9 while sbatch is in flight", 1, 0, 0, 0);
}

#[test]
fn a_task_cancelled_while_its_sbatch_is_in_flight_never_runs_once_the_job_lands() {
    let _cluster = shared_cluster();
    let mut nj = Nj::new("");
    let (path, gate) = slow_sbatch(&nj);
    let (id, marks) = submit_through(&mut nj, path, &gate);
    // The run has no job yet: the cancel finds nothing to stop, and leaves
    // the run folder saying so...
    nj.ok(&["cancel", &id.to_string()]);
    // ...and once the sbatch lands the job, it is cancelled, or its
    // supervisor finds the run cancelled: the task never runs.
    std::fs::write(gate.join("go"), "").unwrap();
    ended_cancelled_before_it_ran(&nj, id, &marks);
}

#[test]
fn a_task_cancelled_while_its_sbatch_is_in_flight_and_the_daemon_killed_never_runs_after_adoption()
{
    let _cluster = shared_cluster();
    let mut nj = Nj::new("");
    let (path, gate) = slow_sbatch(&nj);
    let (id, marks) = submit_through(&mut nj, path, &gate);
    nj.ok(&["cancel", &id.to_string()]);
    // Killed before the sbatch returns; it lands the job 2 s later, while
    // the next daemon starts: that one adopts the job, and must stop it.
    kill_in_sbatch(&mut nj, &gate, false);
    nj.start();
    ended_cancelled_before_it_ran(&nj, id, &marks);
}

/// Task `id`'s run has ended `cancelled`, its SLURM job is `CANCELLED` (or
/// `COMPLETED`: a job that landed while no daemon was up may start before
/// the next one can scancel it, and its supervisor, finding the run
/// cancelled, exits without starting the task), and the task (which marks
/// `marks/m` when it runs) never ran.
fn ended_cancelled_before_it_ran(nj: &Nj, id: i64, marks: &Path) {
    nj.until("the run's end is recorded", || {
        !nj.show(id)["runs"][0]["finished_at"].is_null()
    });
    let show = nj.show(id);
    assert_eq!(show["task"]["state"], "cancelled", "{show}");
    assert_eq!(show["runs"][0]["class"], "cancelled", "{show}");
    let job = job_of(nj, id);
    let state = job_field(&job, "JobState");
    assert!(
        matches!(state.as_deref(), Some("CANCELLED" | "COMPLETED")),
        "{state:?}: {}",
        nj.daemon_log()
    );
    assert!(
        !marks.join("m").exists(),
        "the cancelled task never ran: {}",
        nj.daemon_log()
    );
}

#[test]
fn a_stopped_controller_delays_starts_without_failing_them_and_running_jobs_end_once() {
    let _alone = CONTROLLER.write().unwrap_or_else(|e| e.into_inner());
    let nj = world("");
    let marks = nj.path("marks");
    let mark = |n: &str| format!("echo run >> {}/{n}; sleep 2", marks.display());
    let first = nj.submit(&["--", "sh", "-c", &mark("first")]);
    let job = job_of(&nj, first);
    nj.until("SLURM runs it", || {
        job_field(&job, "JobState").as_deref() == Some("RUNNING")
    });
    let pid_file = Path::new(cluster()).with_file_name("slurmctld.pid");
    let pid: i32 = read(&pid_file).trim().parse().expect("slurmctld's pid");
    crate::harness::unsafe_kill(pid, libc::SIGTERM);
    nj.until("slurmctld is gone", || !crate::harness::alive(pid));
    let second = nj.submit(&["--", "sh", "-c", &mark("second")]);
    nj.until("the second waits, saying why", || {
        let why = nj.ok(&["why", &second.to_string()]);
        why.contains("SLURM did not")
    });
    assert_eq!(
        nj.show(second)["task"]["state"],
        "queued",
        "not failed: {}",
        nj.show(second)
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/slurm-dev");
    let out = Command::new(&script).output().expect("restart slurmctld");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(nj.wait(first), 0, "{}", nj.daemon_log());
    assert_eq!(nj.wait(second), 0, "{}", nj.daemon_log());
    for n in ["first", "second"] {
        assert_eq!(read(&marks.join(n)), "run\n", "{n} ran once");
    }
    assert_eq!(nj.show(first)["runs"].as_array().map(Vec::len), Some(1));
    crate::harness::chaos_row(
        "slurmctld stopped while a job runs and one is submitted",
        2,
        0,
        0,
        0,
    );
}

#[test]
fn a_node_that_fails_under_a_job_makes_its_run_lost_with_slurms_reason() {
    let _alone = CONTROLLER.write().unwrap_or_else(|e| e.into_inner());
    let nj = world("");
    let shared = nj.dir.path().join("shared");
    let id = nj.submit(&["--", "sleep", "300"]);
    let job = job_of(&nj, id);
    nj.until("the task began on the node", || {
        std::fs::read_dir(shared.join("runs"))
            .map(|d| d.flatten().any(|r| r.path().join("started").exists()))
            .unwrap_or(false)
    });
    let node = slurm("sinfo", &["-h", "-N", "-o", "%N"]).trim().to_string();
    slurm(
        "scontrol",
        &[
            "update",
            &format!("NodeName={node}"),
            "State=DOWN",
            "Reason=nightjar-test",
        ],
    );
    nj.wait(id);
    // The node comes back (ReturnToService=2 brings it when slurmd answers).
    slurm(
        "scontrol",
        &["update", &format!("NodeName={node}"), "State=RESUME"],
    );
    nj.until("the node is back", || {
        let s = slurm("sinfo", &["-h", "-N", "-o", "%T"]);
        s.trim() == "idle" || s.trim() == "mixed"
    });
    let run = nj.show(id)["runs"][0].clone();
    assert_eq!(run["class"], "lost", "{run}");
    assert!(
        run["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("SLURM job {job} ended NODE_FAIL"))),
        "{run}"
    );
}

#[test]
fn an_sbatch_that_outlives_the_restart_s_wait_lands_a_job_that_never_runs_the_task() {
    let _cluster = shared_cluster();
    let mut nj = Nj::new("");
    let (path, gate) = slow_sbatch(&nj);
    // Only the first sbatch waits for the test's word; the others go through.
    let wrapper = nj.path("bin").join("sbatch");
    let script = read(&wrapper);
    let real = script
        .lines()
        .find_map(|l| l.strip_prefix("exec "))
        .and_then(|l| l.split_whitespace().next())
        .expect("the real sbatch")
        .to_string();
    let script = script.replacen(
        "#!/bin/sh\n",
        &format!(
            "#!/bin/sh\nmkdir {} 2>/dev/null || exec {real} \"$@\"\n",
            gate.join("first").display()
        ),
        1,
    );
    std::fs::write(&wrapper, script).unwrap();
    let (id, marks) = submit_through(&mut nj, path, &gate);
    let first_run = nj.show(id)["runs"][0]["id"].as_i64().expect("a run");
    nj.kill9();
    // The old sbatch is still held back when the next daemon stops waiting
    // for it (the command limit and a little): the run is given back,
    // submitted again, and runs.
    nj.start();
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    assert_eq!(read(&marks.join("m")), "run\n");
    // Now the old sbatch lands its job: it must not run the task again.
    std::fs::write(gate.join("go"), "").unwrap();
    let comment = job_field(&job_of(&nj, id), "Comment").expect("a comment");
    let old = format!(
        "{}:run:{first_run}",
        comment.rsplit_once(":run:").unwrap().0
    );
    nj.until_slow("the old sbatch's job ends", || {
        slurm("squeue", &["-h", "-t", "all", "-o", "%T|%k"])
            .lines()
            .filter_map(|l| l.strip_suffix(&format!("|{old}")))
            .any(|state| !matches!(state, "PENDING" | "CONFIGURING" | "RUNNING" | "COMPLETING"))
    });
    assert_eq!(
        read(&marks.join("m")),
        "run\n",
        "the old sbatch's job found its run given back and never started the task"
    );
}

#[test]
fn another_users_job_with_a_runs_comment_is_not_taken_for_the_runs_job() {
    let _cluster = shared_cluster();
    let nj = world("");
    let marks = nj.path("marks");
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        &format!("echo run >> {}/m; sleep 6", marks.display()),
    ]);
    let job = job_of(&nj, id);
    nj.until("SLURM runs it", || {
        job_field(&job, "JobState").as_deref() == Some("RUNNING")
    });
    // Anyone can give a job any comment: nobody's job copies the run's,
    // and ends at once without a status in the run folder.
    let comment = job_field(&job, "Comment").expect("a comment");
    let spoof = slurm(
        "sbatch",
        &[
            "--parsable",
            "--uid=65534",
            &format!("--comment={comment}"),
            "--chdir=/tmp",
            "-o",
            "/dev/null",
            "--wrap",
            "true",
        ],
    );
    let spoof: i64 = spoof.trim().parse().expect("the spoof's job id");
    nj.until("nobody's job is over", || {
        job_field(&spoof.to_string(), "JobState").is_some_and(|s| s != "PENDING" && s != "RUNNING")
    });
    assert_eq!(nj.wait(id), 0, "{}\n{}", nj.show(id), nj.daemon_log());
    let show = nj.show(id);
    assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
    assert_eq!(show["runs"][0]["class"], "ok", "{show}");
    assert_eq!(show["runs"][0]["supervisor_pid"].to_string(), job, "{show}");
    assert_eq!(read(&marks.join("m")), "run\n");
}
