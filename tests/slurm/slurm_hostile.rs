//! What another user of the cluster can put in front of the daemon: a job
//! whose comment, which `squeue` prints as its owner wrote it, holds a
//! newline and a line of its own, or bytes that are no UTF-8 (neither
//! passes for a run's job, and neither hides one); a link of theirs on the
//! way to the shared folder (the daemon does not start).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::process::Command;

use crate::cluster::{cluster, executor, job_field, job_of, shared_cluster, slurm, world};
use crate::harness::{Nj, read};

/// nobody's `sleep 120` with `comment` (any bytes): cancelled when dropped.
struct Spoof(String);

impl Spoof {
    fn start(comment: Vec<u8>) -> Spoof {
        let mut arg = b"--comment=".to_vec();
        arg.extend(comment);
        let out = Command::new("sbatch")
            .args([
                "--parsable",
                "--uid=65534",
                "--chdir=/tmp",
                "-o",
                "/dev/null",
            ])
            .arg(OsString::from_vec(arg))
            .args(["--wrap", "sleep 120"])
            .env("SLURM_CONF", cluster())
            .output()
            .expect("run sbatch");
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            !id.is_empty(),
            "sbatch gave the spoof no job id: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Spoof(id)
    }
}

impl Drop for Spoof {
    fn drop(&mut self) {
        slurm("scancel", &[&self.0]);
    }
}

/// A task that marks each run and outlasts what the daemon would wait
/// before it took a job it no longer sees for lost (its polls, and
/// accounting's 10 s); its id and job once SLURM runs it.
fn long_task(nj: &Nj) -> (i64, String) {
    let marks = nj.path("marks");
    let id = nj.submit(&[
        "--",
        "sh",
        "-c",
        &format!("echo run >> {}/m; sleep 20", marks.display()),
    ]);
    let job = job_of(nj, id);
    nj.until("SLURM runs it", || {
        job_field(&job, "JobState").as_deref() == Some("RUNNING")
    });
    (id, job)
}

/// The task ran once, in `job`, and its end is its own.
fn ran_once_in(nj: &Nj, id: i64, job: &str) {
    assert_eq!(nj.wait(id), 0, "{}\n{}", nj.show(id), nj.daemon_log());
    let show = nj.show(id);
    assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
    assert_eq!(show["runs"][0]["class"], "ok", "{show}");
    assert_eq!(show["runs"][0]["supervisor_pid"].to_string(), job, "{show}");
    assert_eq!(read(&nj.path("marks").join("m")), "run\n");
}

#[test]
fn a_comment_with_a_newline_forges_no_squeue_line_of_the_daemons_user() {
    let _cluster = shared_cluster();
    let nj = world("");
    let (id, job) = long_task(&nj);
    let comment = job_field(&job, "Comment").expect("a comment");
    // nobody's job whose comment ends its line and writes another: root's
    // (uid 0) job with the run's comment, newer than the run's, ended.
    let forged = format!("x\n{}|COMPLETED|None|n1|0|{comment}", u32::MAX / 2);
    let _spoof = Spoof::start(forged.into_bytes());
    ran_once_in(&nj, id, &job);
}

#[test]
fn a_comment_that_is_not_utf8_hides_no_job_from_the_daemon() {
    let _cluster = shared_cluster();
    let nj = world("");
    let (id, job) = long_task(&nj);
    let _spoof = Spoof::start(b"x\xff\xfey".to_vec());
    ran_once_in(&nj, id, &job);
}

#[test]
fn a_shared_dir_reached_through_another_users_link_stops_the_daemon() {
    use std::os::unix::fs::PermissionsExt;
    let _cluster = shared_cluster();
    let mut nj = Nj::new("");
    // A scratch folder every user may write (sticky, as /tmp), and in it
    // nobody's link to a folder of root's: nobody may point it at a
    // folder of theirs once the daemon runs.
    let scratch = nj.path("scratch");
    std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let real = nj.path("real");
    let link = scratch.join("shared");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    nj.set_config(&executor(&link));
    nj.env.push(("SLURM_CONF".into(), cluster().into()));
    let (code, said) = nj.start_refused();
    assert_ne!(code, 0);
    assert!(
        said.contains("is a symbolic link owned by uid 65534"),
        "{said}"
    );
    assert!(std::fs::read_dir(&real).unwrap().next().is_none());
    // Root's link: it starts.
    std::os::unix::fs::lchown(&link, Some(0), Some(0)).unwrap();
    nj.start();
    let id = nj.submit(&["--", "true"]);
    assert_eq!(nj.wait(id), 0, "{}", nj.daemon_log());
}
