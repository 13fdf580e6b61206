//! SLURM jobs that are their tasks' owners' (`[executor] job_user =
//! "owner"`, a root daemon): SLURM sees the owner as the job's user, the
//! run folder is theirs, and the root daemon reads what they could plant
//! there only as plain files, and adopts their jobs after a crash by their
//! user as well as their comment.

use std::path::PathBuf;

use crate::cluster::*;
use crate::users_harness::{System, Users};

/// A root daemon on the cluster, its shared folder enterable by users
/// (which the daemon checks before it hands a job to its owner).
fn owners_system() -> (System, tempfile::TempDir) {
    system_of("")
}

/// Task `id`'s `show` once it ended, which it did succeeding.
fn succeeded(sys: &System, id: i64) -> serde_json::Value {
    let show = crate::users_harness::wait_end(sys, id);
    assert_eq!(
        show["task"]["state"],
        "succeeded",
        "{show}\n{}",
        sys.nj.daemon_log()
    );
    show
}

/// A root daemon on the cluster with `extra` `[executor]` keys.
fn system_of(extra: &str) -> (System, tempfile::TempDir) {
    let shared = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let sys = crate::users_harness::system_with(
        &format!("{}{extra}", executor(shared.path())),
        None,
        &[("SLURM_CONF", cluster())],
    );
    (sys, shared)
}

#[test]
fn a_users_task_is_that_users_slurm_job_and_the_root_daemon_never_reads_through_what_they_planted()
{
    let _cluster = shared_cluster();
    let u = crate::users_harness::users("slurm: a user's job");
    let (sys, shared) = owners_system();
    // A file only root reads, and a task that, from inside its job, puts
    // a link to it in place of its run folder's stderr log.
    let secret = sys.nj.path("secret").join("root-only");
    std::fs::write(&secret, "the root-only secret\n").unwrap();
    let plant = format!(
        "id -un; echo job=$SLURM_JOB_ID; echo to-stderr >&2; \
         ln -sf {secret} {runs}/$NIGHTJAR_RUN_ID/stderr.log && echo planted",
        runs = shared.path().join("runs").display(),
        secret = secret.display(),
    );
    let id = sys.submit(&u, &u.alice, &["--", "sh", "-c", &plant]);
    let job = job_of(&sys.nj, id);
    let show = succeeded(&sys, id);
    // SLURM's job is alice's (sbatch --uid), not root's.
    let user = job_field(&job, "UserId").expect("the job's user");
    assert!(
        user.starts_with(&format!("njtest-alice({})", u.alice.uid)),
        "SLURM sees the task's owner as the job's user: {user}"
    );
    let log = sys.ok(&u, &u.alice, &["logs", &id.to_string()]);
    assert!(
        log.contains("njtest-alice"),
        "the task ran as its owner: {log}"
    );
    assert!(log.contains("job="), "inside its SLURM job: {log}");
    assert!(log.contains("planted"), "the link was planted: {log}");
    // The run folder is alice's; the daemon, root, reads the link as
    // what it is: not a log, and never the file it points at.
    let dir = PathBuf::from(show["runs"][0]["run_dir"].as_str().unwrap());
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&dir).unwrap().uid(), u.alice.uid);
    assert!(
        std::fs::symlink_metadata(dir.join("stderr.log"))
            .unwrap()
            .is_symlink()
    );
    let out = sys.cli(&u, &u.alice, &["logs", "--stderr", &id.to_string()]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!said.contains("root-only secret"), "{said}");
    assert!(said.contains("symbolic link"), "the error says why: {said}");
    let out = sys.cli(
        &u,
        &u.alice,
        &["logs", "--stderr", "--tail", "5", &id.to_string()],
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("root-only secret"),
        "{out:?}"
    );
    // A sweep of alice's is one job array, alice's, each member run as her.
    let sweep = crate::users_harness::folder_of(&u.alice, "slurm-sweep");
    let file = sweep.join("sweep.toml");
    std::fs::write(
        &file,
        "name = \"owned\"\ncommand = [\"sh\", \"-c\", \"id -un\"]\n[sweep]\ni = [1, 2, 3]\n",
    )
    .unwrap();
    std::os::unix::fs::chown(&file, Some(u.alice.uid), Some(u.alice.gid)).unwrap();
    let sid = sys.submit(&u, &u.alice, &[file.to_str().unwrap()]);
    let members = sys.nj.show(sid)["members"].clone();
    for m in members.as_array().expect("members") {
        let mid = m["id"].as_i64().unwrap();
        succeeded(&sys, mid);
        let job = job_of(&sys.nj, mid);
        assert!(job.contains('_'), "an element of a job array: {job}");
        let user = job_field(&job, "UserId").unwrap_or_default();
        assert!(user.starts_with("njtest-alice("), "{job}: {user}");
        let log = sys.ok(&u, &u.alice, &["logs", &mid.to_string()]);
        assert!(log.contains("njtest-alice"), "{log}");
    }
}

#[test]
fn a_daemon_killed_while_an_owners_jobs_run_adopts_them_by_their_user_and_records_each_end_once() {
    let _cluster = shared_cluster();
    let u: Users = crate::users_harness::users("slurm: an owner's jobs adopted");
    let (mut sys, _shared) = owners_system();
    let marks = crate::users_harness::folder_of(&u.alice, "slurm-marks");
    let ids: Vec<i64> = (0..2)
        .map(|i| {
            let script = format!("echo run >> {}/t{i}; sleep 3; exit {i}", marks.display());
            sys.submit(&u, &u.alice, &["--", "sh", "-c", &script])
        })
        .collect();
    let jobs: Vec<String> = ids.iter().map(|&id| job_of(&sys.nj, id)).collect();
    sys.nj.until("both run in SLURM", || {
        jobs.iter()
            .all(|j| job_field(j, "JobState").as_deref() == Some("RUNNING"))
    });
    sys.nj.kill9();
    sys.nj.start();
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(sys.nj.wait(id), i as i32, "{}", sys.nj.daemon_log());
        let show = sys.nj.show(id);
        assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
        assert_eq!(
            crate::harness::read(&marks.join(format!("t{i}"))),
            "run\n",
            "t{i} ran once"
        );
        let user = job_field(&jobs[i], "UserId").unwrap_or_default();
        assert!(user.starts_with("njtest-alice("), "{}: {user}", jobs[i]);
    }
    assert_eq!(jobs_like(&jobs[0]).len(), 2, "one job per task");
}

#[test]
fn a_job_whose_owner_changes_its_comment_is_still_its_runs_and_its_end_is_recorded_once() {
    let _cluster = shared_cluster();
    let u: Users = crate::users_harness::users("slurm: an owner renames their job");
    let (sys, _shared) = owners_system();
    // From inside its job, the task wipes the comment the daemon finds its
    // job by, then runs on: the daemon must not take the job for gone
    // (and the run for ended, its slot free, a retry due) while it runs.
    let conf = format!("SLURM_CONF={}", cluster());
    let script = "scontrol update JobId=$SLURM_JOB_ID Comment=mine-now && echo renamed; sleep 3; echo done; \
         echo result > ${OUTPUT_PATH}/out.txt";
    let id = sys.submit(&u, &u.alice, &["-e", &conf, "--", "sh", "-c", script]);
    let job = job_of(&sys.nj, id);
    sys.nj.until("the job's comment is changed", || {
        job_field(&job, "Comment").as_deref() == Some("mine-now")
    });
    let show = succeeded(&sys, id);
    assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
    let log = sys.ok(&u, &u.alice, &["logs", &id.to_string()]);
    assert!(log.contains("renamed") && log.contains("done"), "{log}");
    // The default output folder is in the run folder, which is alice's:
    // a task of hers may use it (a local one may not: the state dir is root's).
    let dir = PathBuf::from(show["runs"][0]["run_dir"].as_str().unwrap());
    let out = dir.join("output").join("out.txt");
    assert_eq!(crate::harness::read(&out), "result\n");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&out).unwrap().uid(), u.alice.uid);
}

#[test]
fn with_job_user_daemon_a_users_task_is_the_daemons_job_and_runs_as_its_owner_on_the_node() {
    let _cluster = shared_cluster();
    let u: Users = crate::users_harness::users("slurm: job_user = daemon");
    let (sys, _shared) = system_of("job_user = \"daemon\"\n");
    let id = sys.submit(
        &u,
        &u.alice,
        &["--", "sh", "-c", "id -un; echo job=$SLURM_JOB_ID"],
    );
    let job = job_of(&sys.nj, id);
    let show = succeeded(&sys, id);
    // SLURM's job is root's; the supervisor dropped the task to alice.
    let user = job_field(&job, "UserId").expect("the job's user");
    assert!(user.starts_with("root(0)"), "{user}");
    let log = sys.ok(&u, &u.alice, &["logs", &id.to_string()]);
    assert!(
        log.contains("njtest-alice"),
        "the task ran as its owner: {log}"
    );
    // The run folder stays root's.
    let dir = PathBuf::from(show["runs"][0]["run_dir"].as_str().unwrap());
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&dir).unwrap().uid(), 0);
}

#[test]
fn an_owner_who_rewrites_the_started_marker_late_does_not_shorten_the_run_on_record() {
    let _cluster = shared_cluster();
    let u: Users = crate::users_harness::users("slurm: an owner's late marker");
    let (sys, shared) = owners_system();
    // The task removes the marker its supervisor left, works 3 s, then
    // writes one that says it began just now: a run of no time, if believed
    // (fair share, quotas and energy count run time).
    let script = format!(
        "m={}/runs/$NIGHTJAR_RUN_ID/started; rm -f $m; sleep 3; date +%s%3N > $m; sleep 0.5",
        shared.path().display()
    );
    let id = sys.submit(&u, &u.alice, &["--", "sh", "-c", &script]);
    let show = succeeded(&sys, id);
    let run = &show["runs"][0];
    let ran = run["finished_at"].as_i64().unwrap() - run["started_at"].as_i64().unwrap();
    assert!(
        ran >= 2500,
        "the run is on record from when SLURM was seen running it, not from the owner's marker: {ran} ms\n{show}"
    );
}
