//! Supervisors that stop acting: stopped (SIGSTOP) past a timeout or a
//! cancel's grace, the daemon ends the run itself; killed (SIGKILL) while the
//! task lives, the run is `lost` and retried under the task's attempts.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{Nj, unsafe_kill};

fn supervisor_of(nj: &Nj, id: i64) -> i32 {
    nj.until("the run has its supervisor", || {
        !nj.show(id)["runs"][0]["supervisor_pid"].is_null()
    });
    nj.show(id)["runs"][0]["supervisor_pid"].as_i64().unwrap() as i32
}

fn left(marker: &str) -> String {
    let out = Command::new("pgrep").args(["-f", marker]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_stopped_supervisor_does_not_stop_a_timeout() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--timeout", "2s", "--", "sh", "-c", "exec sleep 60.321"]);
    let sup = supervisor_of(&nj, id);
    nj.until("the task runs", || !left("sleep 60.321").is_empty());
    let t0 = Instant::now();
    unsafe_kill(sup, libc::SIGSTOP);
    let code = nj.wait_within(id, Duration::from_secs(30));
    println!(
        "ended {:?} after the stop (timeout 2 s, grace 1 s)",
        t0.elapsed()
    );
    assert_ne!(code, 0);
    let run = &nj.show(id)["runs"][0];
    assert_eq!(run["class"], "timeout", "{run}");
    assert!(
        run["message"]
            .as_str()
            .unwrap_or("")
            .contains("the daemon killed"),
        "{run}"
    );
    nj.until("the task's tree is gone", || {
        left("sleep 60.321").is_empty()
    });
    crate::harness::chaos_row("supervisor stopped past a timeout", 1, 0, 0, 0);
}

#[test]
fn a_stopped_supervisor_does_not_hold_a_cancel_past_its_grace() {
    let mut nj = Nj::new("");
    nj.start();
    let id = nj.submit(&["--", "sh", "-c", "exec sleep 61.234"]);
    let sup = supervisor_of(&nj, id);
    nj.until("the task runs", || !left("sleep 61.234").is_empty());
    unsafe_kill(sup, libc::SIGSTOP);
    nj.ok(&["cancel", &id.to_string()]);
    nj.wait_within(id, Duration::from_secs(30));
    let run = &nj.show(id)["runs"][0];
    assert_eq!(run["class"], "cancelled", "{run}");
    assert_eq!(nj.show(id)["task"]["state"], "cancelled");
    nj.until("the task's tree is gone", || {
        left("sleep 61.234").is_empty()
    });
    crate::harness::chaos_row("supervisor stopped past a cancel", 1, 0, 0, 0);
}

#[test]
fn a_killed_supervisor_makes_the_run_lost_and_the_task_is_retried() {
    let mut nj = Nj::new("");
    nj.start();
    let mark = nj.path("marks").join("first");
    let script = format!(
        "if [ -e {m} ]; then exit 0; fi; touch {m}; exec sleep 62.5",
        m = mark.display()
    );
    let id = nj.submit(&["--attempts", "3", "--", "sh", "-c", &script]);
    let sup = supervisor_of(&nj, id);
    nj.until("the first attempt runs", || !left("sleep 62.5").is_empty());
    unsafe_kill(sup, libc::SIGKILL);
    assert_eq!(
        nj.wait_within(id, Duration::from_secs(90)),
        0,
        "the second attempt succeeds: {}",
        nj.show(id)
    );
    let runs = nj.show(id)["runs"].clone();
    assert_eq!(runs[0]["class"], "lost", "{runs}");
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");
    assert!(left("sleep 62.5").is_empty(), "the first tree was killed");
    crate::harness::chaos_row("supervisor killed (-9), retried", 1, 0, 0, 0);
}

#[test]
fn a_stopped_supervisor_does_not_hold_a_preemption_past_its_grace() {
    let mut nj = crate::policies::world(
        "[plugins]\nchain = [\"fair-share\"]\npreempt_min_runtime = \"100ms\"\n[plugin.fair-share.config]\npreempt_below = 0.5\n",
    );
    nj.start();
    let work = nj.path("work");
    // Saves a checkpoint every 0.2 s; on SIGUSR1 it would save and exit.
    std::fs::write(
        work.join("train.sh"),
        "mkdir -p ckpt; i=0; trap 'exit 0' USR1; \
         while :; do i=$((i+1)); echo $i > ckpt/c-$i; touch ckpt/c-$i.done; sleep 0.2; done\n",
    )
    .unwrap();
    std::fs::write(
        work.join("hog.toml"),
        "name = \"hog\"\nproject = \"hog\"\ncommand = [\"sh\", \"train.sh\"]\npreemptible = true\n\
         checkpoint = { pattern = \"ckpt/c-*\", marker = \"{}.done\", signal = \"USR1\", grace = \"1s\" }\n",
    )
    .unwrap();
    let hog = nj.json(&["submit", "hog.toml"])[0]["id"].as_i64().unwrap();
    let sup = supervisor_of(&nj, hog);
    nj.until("it saved", || work.join("ckpt/c-2.done").exists());
    // Its supervisor stops: the SIGUSR1 of the preemption is never acted on.
    unsafe_kill(sup, libc::SIGSTOP);
    let t0 = Instant::now();
    let starved = nj.submit(&["--project", "starved", "--", "true"]);
    assert_eq!(nj.wait_within(starved, Duration::from_secs(40)), 0);
    println!(
        "the starved task ran {:?} after the stop (grace 1 s)",
        t0.elapsed()
    );
    let first = nj.show(hog)["runs"][0].clone();
    assert_eq!(first["class"], "preempted", "{first}");
    assert!(
        first["message"]
            .as_str()
            .unwrap_or("")
            .contains("the daemon killed"),
        "{first}"
    );
    nj.until("the hog runs again", || {
        nj.show(hog)["runs"]
            .as_array()
            .is_some_and(|r| r.len() == 2)
    });
    nj.ok(&["cancel", &hog.to_string()]);
    nj.wait_within(hog, Duration::from_secs(30));
    nj.until("the stopped supervisor was killed", || {
        !crate::harness::alive(sup)
    });
    crate::harness::chaos_row("supervisor stopped past a preemption", 1, 0, 0, 0);
}
