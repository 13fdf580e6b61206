//! What another user of the cluster can put in front of the daemon through
//! SLURM itself: a job whose comment, which `squeue` prints as its owner
//! wrote it, holds a newline and a line of its own, or bytes that are no
//! UTF-8. Neither passes for a run's job, and neither hides one.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::process::Command;

use crate::cluster::{cluster, job_field, job_of, shared_cluster, slurm, world};
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
