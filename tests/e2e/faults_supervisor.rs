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
