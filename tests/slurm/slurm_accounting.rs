//! SLURM's accounting (slurmdbd, read with `sacct`), on the test cluster
//! that keeps it: how a job ended once `squeue` has forgotten it, and who
//! cancelled it outside nightjar; and a daemon whose `slurm.conf` says the
//! cluster keeps none (a copy with `accounting_storage/none`: its commands
//! reach the same controller, its `sacct` answers that accounting is off).

use std::path::Path;

use crate::cluster::{
    CONTROLLER, cancelled_by_hand, cluster, job_field, job_of, shared_cluster, slurm, world,
    world_with,
};
use crate::harness::read;

/// The cluster's `MinJobAge` set to `secs` (SLURM then forgets an ended
/// job within a minute: its purge runs once a minute) until dropped, when
/// it is back at 300.
struct MinJobAge;

impl MinJobAge {
    fn set(secs: u32) -> MinJobAge {
        set_min_job_age(secs);
        MinJobAge
    }
}

impl Drop for MinJobAge {
    fn drop(&mut self) {
        set_min_job_age(300);
    }
}

fn set_min_job_age(secs: u32) {
    let conf = Path::new(cluster());
    let text: String = (read(conf).lines())
        .map(|l| match l.starts_with("MinJobAge=") {
            true => format!("MinJobAge={secs}\n"),
            false => format!("{l}\n"),
        })
        .collect();
    std::fs::write(conf, text).unwrap();
    slurm("scontrol", &["reconfigure"]);
    let said = slurm("scontrol", &["show", "config"]);
    assert!(
        said.lines()
            .any(|l| l.starts_with("MinJobAge") && l.contains(&format!("= {secs} sec"))),
        "slurmctld took MinJobAge={secs}: {said}"
    );
}

#[test]
fn jobs_that_ended_and_left_squeue_while_the_daemon_was_down_end_as_slurms_accounting_says() {
    // Alone: the other tests' jobs would leave squeue a minute after they
    // end, and some read them there.
    let _alone = CONTROLLER.write().unwrap_or_else(|e| e.into_inner());
    let _age = MinJobAge::set(2);
    let mut nj = world("");
    let marks = nj.path("marks");
    let task = |n: &str| {
        let script = format!("echo run >> {}/{n}; exec sleep 301", marks.display());
        nj.submit(&["--", "sh", "-c", &script])
    };
    let (by_hand, killed) = (task("hand"), task("killed"));
    let (hand_job, killed_job) = (job_of(&nj, by_hand), job_of(&nj, killed));
    nj.until("both tasks began", || {
        marks.join("hand").exists() && marks.join("killed").exists()
    });
    let dir = nj.show(killed)["runs"][0]["run_dir"]
        .as_str()
        .expect("a run folder")
        .to_string();
    nj.kill9();
    // While no daemon watches: one job cancelled by hand (its supervisor
    // reports the signal it got), and the other's supervisor killed on
    // the node (no status at all; its task too). The supervisor is the
    // batch step's process (its script execs it), its run folder last.
    slurm("scancel", &[&hand_job]);
    let supervisor = std::process::Command::new("pgrep")
        .args(["-f", &format!(" {dir}$")])
        .output()
        .unwrap();
    let pids = String::from_utf8_lossy(&supervisor.stdout).to_string();
    assert!(!pids.trim().is_empty(), "the supervisor of {dir} runs");
    for pid in pids.split_whitespace() {
        crate::harness::unsafe_kill(pid.parse().unwrap(), libc::SIGKILL);
    }
    std::process::Command::new("pkill")
        .args(["-KILL", "-f", "^sleep 301$"])
        .status()
        .unwrap();
    nj.until_slow(
        "SLURM forgets both jobs (MinJobAge 2 s, purged each minute)",
        || {
            std::thread::sleep(std::time::Duration::from_millis(500));
            job_field(&hand_job, "JobState").is_none()
                && job_field(&killed_job, "JobState").is_none()
        },
    );
    nj.start();
    nj.wait(by_hand);
    nj.wait(killed);
    let run = |id: i64| {
        let show = nj.show(id);
        assert_eq!(show["runs"].as_array().map(Vec::len), Some(1), "{show}");
        show["runs"][0].clone()
    };
    let hand = run(by_hand);
    assert_eq!(hand["class"], "cancelled", "{hand}");
    let message = hand["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "SLURM job {hand_job} was cancelled outside nightjar by root (uid 0)"
        )),
        "accounting says who: {hand}"
    );
    let lost = run(killed);
    assert_eq!(lost["class"], "lost", "{lost}");
    let message = lost["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("SLURM job {killed_job} ended FAILED"))
            && message
                .contains("its batch step ended with killed by signal 9 (SLURM's accounting)"),
        "accounting says how: {lost}"
    );
    for n in ["hand", "killed"] {
        assert_eq!(read(&marks.join(n)), "run\n", "{n} ran once");
    }
}

#[test]
fn without_accounting_a_hand_scancel_is_recorded_from_squeue_and_the_daemon_says_why_once() {
    let _cluster = shared_cluster();
    let conf_dir = tempfile::tempdir().unwrap();
    let conf = conf_dir.path().join("slurm.conf");
    let text: String = (read(Path::new(cluster())).lines())
        .filter(|l| {
            !l.starts_with("AccountingStorageHost") && !l.starts_with("AccountingStoragePort")
        })
        .map(|l| match l.starts_with("AccountingStorageType=") {
            true => "AccountingStorageType=accounting_storage/none\n".to_string(),
            false => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&conf, text).unwrap();
    let nj = world_with("", &[("SLURM_CONF", conf.display().to_string())]);
    let (job, run) = cancelled_by_hand(&nj);
    assert_eq!(run["class"], "cancelled", "{run}");
    let message = run["message"].as_str().unwrap_or_default();
    // As squeue says it, by its status or without (SLURM says RUNNING a
    // moment before the batch step begins): who, only accounting knows.
    assert!(
        message.contains(&format!("SLURM job {job}"))
            && message
                .contains("cancelled outside nightjar (scancel by a user or an administrator)"),
        "{run}"
    );
    let log = nj.daemon_log();
    assert_eq!(
        log.matches("the SLURM cluster keeps no accounting").count(),
        1,
        "said once: {log}"
    );
}
