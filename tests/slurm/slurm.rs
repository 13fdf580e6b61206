//! The SLURM executor against a real one-node cluster: munged, slurmctld
//! and slurmd from Debian's packages, started by `scripts/slurm-dev` (two
//! GRES "GPUs" backed by stand-in device files). Each run is a SLURM job
//! whose batch step is nightjar's supervisor; these tests read SLURM's own
//! account (`squeue`, `scontrol`) beside nightjar's. The crash and fault
//! cases are `slurm_faults.rs`, job arrays `slurm_arrays.rs`; the shared
//! helpers are `cluster.rs`.

use std::path::Path;
use std::time::Duration;

use crate::cluster::*;
use crate::harness::{Nj, read};

#[test]
fn a_run_is_a_slurm_job_whose_task_sees_the_gpus_slurm_allocated() {
    let _cluster = gpu_cluster();
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
        job_field(&job, "JobName").as_deref(),
        Some(&*format!("nightjar-{id}"))
    );
    let comment = job_field(&job, "Comment").unwrap_or_default();
    assert!(
        comment.starts_with("nightjar:")
            && comment.ends_with(&format!(":run:{}", nj.show(id)["runs"][0]["id"])),
        "{comment}"
    );
    assert!(
        job_field(&job, "TresPerNode").is_some_and(|t| t.contains("gpu:2")),
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
    // A failing task keeps its exit code and class.
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
    // The sweep's members, released in one round and asking alike, are
    // the three elements of one job array; the two tasks before, one job
    // each.
    let jobs = jobs_like(&job);
    assert_eq!(jobs.len(), 5, "one job or element per run: {jobs:?}");
    let elements: Vec<&String> = jobs.iter().filter(|c| c.contains(":batch:")).collect();
    assert!(
        elements.len() == 3 && elements.iter().all(|c| *c == elements[0]),
        "{jobs:?}"
    );
}

#[test]
fn cancel_and_timeout_end_the_job_with_nightjars_own_class_and_a_hand_scancel_is_named() {
    let _cluster = shared_cluster();
    let nj = world("");
    let long = nj.submit(&["--", "sleep", "300"]);
    let job = job_of(&nj, long);
    nj.until("SLURM runs it", || {
        job_field(&job, "JobState").as_deref() == Some("RUNNING")
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
        job_field(&job_of(&nj, timed), "TimeLimit").is_some_and(|t| t == "00:02:00"),
        "SLURM's limit backs ours up: 2 s + 1 s grace + 1 min, in minutes"
    );
    let (job, run) = cancelled_by_hand(&nj);
    assert_eq!(run["class"], "cancelled", "{run}");
    assert!(
        run["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("SLURM job {job}"))
                && m.contains("outside nightjar by root (uid 0)")),
        "a cancel nightjar did not ask for is named as such, its job and who did it (SLURM's accounting): {run}"
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
fn no_more_jobs_wait_in_slurm_than_max_pending_and_the_next_says_why() {
    let _cluster = gpu_cluster();
    let nj = world("max_pending = 1\n");
    // Both GPUs taken outside nightjar: its jobs wait in SLURM.
    let hog = Hog::start(2, 60);
    let a = nj.submit(&["--gpus", "1", "--", "true"]);
    let job = job_of(&nj, a);
    nj.until("SLURM keeps it pending for resources", || {
        job_field(&job, "JobState").as_deref() == Some("PENDING")
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
    hog.cancel();
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
         echo trapping\nwhile true; do step=$((step+1)); sleep 0.2; done\n",
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
    // Not only started: a signal that reaches the shell before its `trap`
    // line kills it unsaved, and the resumed run would count forever
    // (a loaded CI machine took over a second to get there).
    nj.until("the hog's task set its trap on the node", || {
        std::fs::read_to_string(shared.join("runs/1/stdout.log"))
            .is_ok_and(|log| log.contains("trapping"))
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
fn a_job_slurm_ends_at_its_own_time_limit_is_recorded_as_a_timeout_not_a_kill() {
    let _cluster = shared_cluster();
    let nj = world("");
    // No timeout of nightjar's: SLURM's limit (here an administrator's
    // `scontrol update`; a partition's default) is the one that ends it,
    // and SLURM's SIGTERM reaches the task before the supervisor.
    let id = nj.submit(&["--", "sleep", "300"]);
    let job = job_of(&nj, id);
    nj.until("SLURM runs it", || {
        job_field(&job, "JobState").as_deref() == Some("RUNNING")
    });
    slurm(
        "scontrol",
        &["update", &format!("JobId={job}"), "TimeLimit=1"],
    );
    nj.wait_within(id, Duration::from_secs(150));
    let run = nj.show(id)["runs"][0].clone();
    assert_eq!(job_field(&job, "JobState").as_deref(), Some("TIMEOUT"));
    assert_eq!(run["class"], "timeout", "{run}");
    assert!(
        run["message"]
            .as_str()
            .is_some_and(|m| m.contains("SLURM's time limit")),
        "{run}"
    );
}
