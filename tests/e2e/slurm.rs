//! The SLURM executor against a real one-node cluster: munged, slurmctld
//! and slurmd from Debian's packages, started by `scripts/slurm-dev` (two
//! GRES "GPUs" backed by stand-in device files). Each run is a SLURM job
//! whose batch step is nightjar's supervisor; these tests read SLURM's own
//! account (`squeue`, `scontrol`) beside nightjar's.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::harness::{Nj, read};

/// The cluster's `SLURM_CONF`, the cluster started once for the suite.
fn cluster() -> &'static str {
    static CONF: OnceLock<String> = OnceLock::new();
    CONF.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/slurm-dev");
        let out = Command::new(&script).output().expect("run scripts/slurm-dev");
        if !out.status.success() {
            crate::harness::needs(
                "a one-node SLURM cluster",
                format!(
                    "scripts/slurm-dev failed (root and Debian's slurmctld, slurmd, slurm-client and munge): {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            );
        }
        let said = String::from_utf8_lossy(&out.stdout);
        let conf = said
            .lines()
            .find_map(|l| l.strip_prefix("export SLURM_CONF="))
            .map(str::to_string)
            .expect("scripts/slurm-dev prints SLURM_CONF");
        // Jobs an earlier, failed run of the suite left behind would hold
        // the cluster's GPUs.
        let _ = Command::new("scancel")
            .arg("--partition=debug")
            .env("SLURM_CONF", &conf)
            .status();
        conf
    })
}

/// The executor's config, its runs under `shared`.
fn executor(shared: &Path) -> String {
    format!(
        "slots = 8\n[executor]\nkind = \"slurm\"\nshared_dir = \"{}\"\npoll = \"300ms\"\n",
        shared.display()
    )
}

/// Taken (shared) by every test here, and alone by the one that stops
/// slurmctld: the others' sbatch would meet a stopped controller.
static CONTROLLER: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn shared_cluster() -> std::sync::RwLockReadGuard<'static, ()> {
    CONTROLLER.read().unwrap_or_else(|e| e.into_inner())
}

/// A daemon on the cluster, started with `env` more in its environment.
fn world_with(extra: &str, env: &[(&str, String)]) -> Nj {
    let conf = cluster();
    let mut nj = Nj::new("");
    let shared = nj.path("shared");
    nj.set_config(&format!("{}{extra}", executor(&shared)));
    nj.env.push(("SLURM_CONF".into(), conf.into()));
    nj.env
        .extend(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
    nj.start();
    nj
}

fn world(extra: &str) -> Nj {
    world_with(extra, &[])
}

/// A SLURM command's stdout, on the test cluster.
fn slurm(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .env("SLURM_CONF", cluster())
        .output()
        .unwrap_or_else(|e| panic!("run {cmd}: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The SLURM job of task `id`'s last run: the session nightjar recorded.
fn job_of(nj: &Nj, id: i64) -> i64 {
    nj.until("the run has its SLURM job", || {
        nj.show(id)["runs"]
            .as_array()
            .and_then(|r| r.last())
            .is_some_and(|r| r["supervisor_pid"].as_i64().unwrap_or(0) > 0)
    });
    let runs = nj.show(id)["runs"].clone();
    runs.as_array().and_then(|r| r.last()).expect("a run")["supervisor_pid"]
        .as_i64()
        .expect("a job id")
}

/// The comments of every job SLURM keeps whose comment starts with that
/// of `job` up to its run (the jobs of the same daemon).
fn jobs_like(job: i64) -> Vec<String> {
    let comment = job_field(job, "Comment").expect("the job has a comment");
    let tag = comment
        .rsplit_once(":run:")
        .expect("nightjar's comment")
        .0
        .to_string();
    slurm("squeue", &["-h", "-t", "all", "-o", "%k"])
        .lines()
        .filter(|c| c.starts_with(&format!("{tag}:run:")))
        .map(str::to_string)
        .collect()
}

/// `scontrol show job`'s `Key=Value` for `key`.
fn job_field(job: i64, key: &str) -> Option<String> {
    let out = slurm("scontrol", &["show", "job", &job.to_string()]);
    out.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")).map(str::to_string))
}

#[test]
fn a_run_is_a_slurm_job_whose_task_sees_the_gpus_slurm_allocated() {
    let _cluster = shared_cluster();
    let nj = world("");
    let id = nj.submit(&[
        "--name",
        "gpu2",
        "--gpus",
        "2",
        "--",
        "sh",
        "-c",
        "echo gpus=$CUDA_VISIBLE_DEVICES job=$SLURM_JOB_ID",
    ]);
    let job = job_of(&nj, id);
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    let log = nj.ok(&["logs", &id.to_string()]);
    assert!(
        log.contains("gpus=0,1"),
        "the task has SLURM's two GPUs: {log}"
    );
    assert!(log.contains(&format!("job={job}")), "and its job id: {log}");
    assert_eq!(
        job_field(job, "JobName").as_deref(),
        Some(&*format!("nightjar-{id}"))
    );
    let comment = job_field(job, "Comment").unwrap_or_default();
    assert!(
        comment.starts_with("nightjar:")
            && comment.ends_with(&format!(":run:{}", nj.show(id)["runs"][0]["id"])),
        "{comment}"
    );
    assert!(
        job_field(job, "TresPerNode").is_some_and(|t| t.contains("gpu:2")),
        "SLURM was asked for two GPUs"
    );
    // `gpus` lists the nodes' GPUs as SLURM tells them.
    let gpus = nj.json(&["gpus"]);
    let rows = gpus.as_array().expect("a list");
    assert_eq!(rows.len(), 2, "the node's two GPUs: {gpus}");
    let node = slurm("sinfo", &["-h", "-N", "-o", "%N"]);
    assert!(
        rows.iter()
            .all(|g| g["node"] == node.trim()
                && g["name"].as_str().is_some_and(|n| n.contains(" gpu "))),
        "{gpus}"
    );
    // A failing task keeps its exit code and class; a sweep is one job per member.
    let bad = nj.submit(&["--", "sh", "-c", "echo no >&2; exit 3"]);
    assert_eq!(nj.wait(bad), 3);
    let run = &nj.show(bad)["runs"][0];
    assert_eq!(
        (run["class"].as_str(), run["exit_code"].as_i64()),
        (Some("app-error"), Some(3)),
        "{run}"
    );
    let sweep = nj.path("sweep").join("sweep.toml");
    std::fs::write(
        &sweep,
        "name = \"lr\"\ncommand = \"echo lr=${lr}\"\n[sweep]\nlr = [\"0.1\", \"0.2\", \"0.3\"]\n",
    )
    .unwrap();
    let sweep_id = nj.submit(&["-f", sweep.to_str().unwrap()]);
    assert_eq!(nj.wait(sweep_id), 0, "{}", nj.daemon_log());
    let jobs = jobs_like(job);
    assert_eq!(jobs.len(), 5, "each member was its own job: {jobs:?}");
}

#[test]
fn cancel_and_timeout_end_the_job_with_nightjars_own_class_and_a_hand_scancel_is_named() {
    let _cluster = shared_cluster();
    let nj = world("");
    let long = nj.submit(&["--", "sleep", "300"]);
    let job = job_of(&nj, long);
    nj.until("SLURM runs it", || {
        job_field(job, "JobState").as_deref() == Some("RUNNING")
    });
    nj.ok(&["cancel", &long.to_string()]);
    nj.wait(long);
    assert_eq!(
        nj.show(long)["runs"][0]["class"],
        "cancelled",
        "{}",
        nj.show(long)
    );
    let timed = nj.submit(&["--timeout", "2s", "--", "sleep", "300"]);
    nj.wait(timed);
    assert_eq!(
        nj.show(timed)["runs"][0]["class"],
        "timeout",
        "{}",
        nj.show(timed)
    );
    assert!(
        job_field(job_of(&nj, timed), "TimeLimit").is_some_and(|t| t == "00:02:00"),
        "SLURM's limit backs ours up: 2 s + 1 s grace + 1 min, in minutes"
    );
    let by_hand = nj.submit(&["--", "sleep", "300"]);
    let job = job_of(&nj, by_hand);
    nj.until("SLURM runs it", || {
        job_field(job, "JobState").as_deref() == Some("RUNNING")
    });
    slurm("scancel", &[&job.to_string()]);
    nj.wait(by_hand);
    let run = nj.show(by_hand)["runs"][0].clone();
    assert_eq!(run["class"], "cancelled", "{run}");
    assert!(
        run["message"]
            .as_str()
            .is_some_and(|m| m.contains("outside nightjar")),
        "a cancel nightjar did not ask for is named as such: {run}"
    );
}

#[test]
fn why_shows_slurms_state_and_reason_beside_nightjars_verdicts() {
    let _cluster = shared_cluster();
    let nj = world("");
    let id = nj.submit(&["--", "sleep", "30"]);
    let job = job_of(&nj, id);
    nj.until("why names the job", || {
        nj.ok(&["why", &id.to_string()])
            .contains(&format!("SLURM job {job}: RUNNING"))
    });
    nj.ok(&["cancel", &id.to_string()]);
    nj.wait(id);
}

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
    let jobs: Vec<i64> = ids.iter().map(|&id| job_of(&nj, id)).collect();
    nj.until("all three run in SLURM", || {
        jobs.iter()
            .all(|&j| job_field(j, "JobState").as_deref() == Some("RUNNING"))
    });
    nj.kill9();
    nj.start();
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(nj.wait(id), i as i32, "{}", nj.daemon_log());
        let show = nj.show(id);
        assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
        assert_eq!(read(&marks.join(format!("t{i}"))), "run\n", "t{i} ran once");
    }
    let comments = jobs_like(jobs[0]);
    assert_eq!(comments.len(), 3, "one job per task: {comments:?}");
    crate::harness::chaos_row("daemon kill -9 while SLURM jobs run", 3, 0, 0, 0);
}

/// An `sbatch` that says it began, then waits for the test's word (the
/// file `go`) before it hands the job to SLURM.
fn slow_sbatch(nj: &Nj) -> (String, std::path::PathBuf) {
    let bin = nj.path("bin");
    let gate = nj.path("gate");
    let real = String::from_utf8_lossy(
        &Command::new("sh")
            .args(["-c", "command -v sbatch"])
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_string();
    std::fs::write(
        bin.join("sbatch"),
        format!(
            "#!/bin/sh\necho $$ > {g}/pid\nwhile [ ! -e {g}/go ]; do sleep 0.05; done\nexec {real} \"$@\"\n",
            g = gate.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("sbatch"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (path, gate)
}

fn killed_in_sbatch(and_sbatch_too: bool) {
    let mut nj = Nj::new("");
    let (path, gate) = slow_sbatch(&nj);
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
    nj.kill9();
    let sbatch: i32 = read(&gate.join("pid"))
        .trim()
        .parse()
        .expect("sbatch's pid");
    if and_sbatch_too {
        // Nothing reached SLURM: the run must be given back and run once.
        crate::harness::unsafe_kill(sbatch, libc::SIGKILL);
        std::fs::write(gate.join("go"), "").unwrap();
    } else {
        // The old daemon's sbatch lands while the new one starts: it must
        // wait for it and adopt its job, not submit a second.
        let go = gate.join("go");
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            std::fs::write(go, "").unwrap();
        });
    }
    nj.start();
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
    nj.until("its end is recorded", || {
        nj.show(id)["task"]["state"] == "succeeded"
    });
    assert_eq!(read(&marks.join("m")), "run\n", "it ran exactly once");
    let comments = jobs_like(job_of(&nj, id));
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
fn a_users_task_runs_as_that_user_inside_its_slurm_job() {
    let _cluster = shared_cluster();
    let u = crate::users_harness::users("slurm: a user's job");
    let shared = tempfile::tempdir().unwrap();
    let sys = crate::users_harness::system_with(
        &executor(shared.path()),
        None,
        &[("SLURM_CONF", cluster())],
    );
    let id = sys.submit(
        &u,
        &u.alice,
        &["--", "sh", "-c", "id -un; echo job=$SLURM_JOB_ID"],
    );
    let show = crate::users_harness::wait_end(&sys, id);
    assert_eq!(
        show["task"]["state"],
        "succeeded",
        "{show}\n{}",
        sys.nj.daemon_log()
    );
    let log = sys.ok(&u, &u.alice, &["logs", &id.to_string()]);
    assert!(
        log.contains("njtest-alice"),
        "the task ran as its owner: {log}"
    );
    assert!(log.contains("job="), "inside its SLURM job: {log}");
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
        job_field(job, "JobState").as_deref() == Some("RUNNING")
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
fn no_more_jobs_wait_in_slurm_than_max_pending_and_the_next_says_why() {
    let _cluster = shared_cluster();
    let nj = world("max_pending = 1\n");
    // Both GPUs taken outside nightjar: its jobs wait in SLURM.
    let hog = slurm(
        "sbatch",
        &[
            "--parsable",
            "--gres=gpu:2",
            "--wrap",
            "sleep 60",
            "-o",
            "/dev/null",
        ],
    );
    let hog = hog.trim().to_string();
    let a = nj.submit(&["--gpus", "1", "--", "true"]);
    let job = job_of(&nj, a);
    nj.until("SLURM keeps it pending for resources", || {
        job_field(job, "JobState").as_deref() == Some("PENDING")
    });
    let b = nj.submit(&["--gpus", "1", "--", "true"]);
    nj.until("the second waits in nightjar, saying why", || {
        nj.ok(&["why", &b.to_string()])
            .contains("executor.max_pending = 1")
    });
    assert!(
        nj.show(b)["runs"].as_array().is_none_or(Vec::is_empty),
        "{}",
        nj.show(b)
    );
    assert!(
        nj.ok(&["why", &a.to_string()])
            .contains(&format!("SLURM job {job}: PENDING")),
        "the first's why shows SLURM's side"
    );
    let freed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64;
    slurm("scancel", &[&hog]);
    assert_eq!(nj.wait(a), 0);
    assert_eq!(nj.wait(b), 0);
    // Its time PENDING in SLURM is a wait, not run time: the run starts
    // when its task began on the node.
    let run = nj.show(a)["runs"][0].clone();
    let started = run["started_at"].as_i64().expect("a start");
    assert!(
        started >= freed,
        "started {started} before the GPUs were freed at {freed}: {run}"
    );
}

#[test]
fn a_policys_preemption_reaches_the_task_through_scancel_and_it_resumes_from_its_checkpoint() {
    let _cluster = shared_cluster();
    let mut nj = Nj::new("");
    let shared = nj.path("shared");
    nj.set_config(&format!(
        "slots = 1\n[executor]\nkind = \"slurm\"\nshared_dir = \"{}\"\npoll = \"300ms\"\n\
         [plugins]\nchain = [\"fair-share\"]\npreempt_min_runtime = \"100ms\"\n\
         [plugin.fair-share.config]\npreempt_below = 0.5\n",
        shared.display()
    ));
    nj.env.push(("SLURM_CONF".into(), cluster().into()));
    nj.start();
    let work = nj.path("work");
    // Counts a step a second; on SIGUSR1 it saves its step and exits;
    // resumed, it says from where and ends.
    std::fs::write(
        work.join("train.sh"),
        "if [ -n \"$1\" ]; then echo \"resumed from $(cat \"$1\")\"; exit 0; fi\n\
         step=0\ntrap 'echo $step > ckpt/s.ckpt; touch ckpt/s.ckpt.done; echo saved; exit 0' USR1\n\
         while true; do step=$((step+1)); sleep 0.2; done\n",
    )
    .unwrap();
    std::fs::create_dir_all(work.join("ckpt")).unwrap();
    std::fs::write(
        work.join("hog.toml"),
        format!(
            "name = \"hog\"\nproject = \"hog\"\nworkdir = \"{}\"\ncommand = [\"sh\", \"train.sh\"]\npreemptible = true\n\
             checkpoint = {{ pattern = \"ckpt/s.ckpt\", resume = \"${{CHECKPOINT}}\", marker = \"{{}}.done\", signal = \"USR1\", grace = \"30s\" }}\n",
            work.display()
        ),
    )
    .unwrap();
    let hog = nj.json(&["submit", work.join("hog.toml").to_str().unwrap()])[0]["id"]
        .as_i64()
        .expect("the hog's id");
    job_of(&nj, hog);
    nj.until("the hog's task began on the node", || {
        shared.join("runs/1/started").exists()
    });
    let starved = nj.submit(&["--project", "starved", "--", "true"]);
    assert_eq!(
        nj.wait(starved),
        0,
        "the starved project gets the slot: {}",
        nj.daemon_log()
    );
    assert_eq!(nj.wait(hog), 0, "{}", nj.daemon_log());
    let shown = nj.show(hog);
    let runs = shown["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{shown}");
    assert_eq!(runs[0]["class"], "preempted", "{shown}");
    let log = read(&Path::new(runs[0]["run_dir"].as_str().unwrap()).join("stdout.log"));
    assert!(
        log.contains("saved"),
        "the task got its own signal through scancel: {log}"
    );
    let log = read(&Path::new(runs[1]["run_dir"].as_str().unwrap()).join("stdout.log"));
    assert!(log.starts_with("resumed from "), "{log}");
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
    let comment = job_field(job_of(&nj, id), "Comment").expect("a comment");
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
        job_field(job, "JobState").as_deref() == Some("RUNNING")
    });
    // Anyone can give a job any comment: nobody's job copies the run's,
    // and ends at once without a status in the run folder.
    let comment = job_field(job, "Comment").expect("a comment");
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
        job_field(spoof, "JobState").is_some_and(|s| s != "PENDING" && s != "RUNNING")
    });
    assert_eq!(nj.wait(id), 0, "{}\n{}", nj.show(id), nj.daemon_log());
    let show = nj.show(id);
    assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
    assert_eq!(show["runs"][0]["class"], "ok", "{show}");
    assert_eq!(show["runs"][0]["supervisor_pid"], job, "{show}");
    assert_eq!(read(&marks.join("m")), "run\n");
}

#[test]
fn a_job_slurm_ends_at_its_own_time_limit_is_recorded_as_a_timeout_not_a_kill() {
    let _cluster = shared_cluster();
    let nj = world("");
    // No timeout of nightjar's: SLURM's limit (here an administrator's
    // `scontrol update`; a partition's default) is the one that ends it,
    // and SLURM's SIGTERM reaches the task before the supervisor.
    let id = nj.submit(&["--", "sleep", "300"]);
    let job = job_of(&nj, id);
    nj.until("SLURM runs it", || {
        job_field(job, "JobState").as_deref() == Some("RUNNING")
    });
    slurm(
        "scontrol",
        &["update", &format!("JobId={job}"), "TimeLimit=1"],
    );
    nj.wait_within(id, Duration::from_secs(150));
    let run = nj.show(id)["runs"][0].clone();
    assert_eq!(job_field(job, "JobState").as_deref(), Some("TIMEOUT"));
    assert_eq!(run["class"], "timeout", "{run}");
    assert!(
        run["message"]
            .as_str()
            .is_some_and(|m| m.contains("SLURM's time limit")),
        "{run}"
    );
}
