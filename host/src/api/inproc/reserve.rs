//! The first-party `reserve` policy (embedded in the binary) on two
//! simulated GPUs: a GPU kept for urgent work, lent while none waits, and a
//! reservation larger than the machine. (A config the policy refuses stops
//! the daemon's start: that is the end-to-end tier's, `tests/e2e/reserve.rs`.)

use super::World;
use crate::api::Why;
use crate::api::wire::TaskState;

fn world(reservation: &str) -> World {
    World::new(&format!(
        "slots = 8\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n\
         [plugins]\nchain = [\"reserve\"]\n[plugin.reserve.config.urgent-day]\ngpus = 1\nfor_priorities = [\"urgent\"]\n{reservation}"
    ))
}

const ONE_GPU: &str = "resources = { gpus = 1 }";

#[test]
fn one_gpu_is_kept_for_urgent_work_and_an_urgent_task_gets_it() {
    let w = world("");
    let ids: Vec<i64> = (0..3)
        .map(|i| w.task(&format!("t{i}"), &["sleep", "60"], ONE_GPU))
        .collect();
    w.pass();
    let kept = "deferred by reserve: reserve `urgent-day`: 1 GPU kept for urgent tasks; ";
    let deferred: Vec<i64> = ids
        .iter()
        .copied()
        .filter(|&t| w.reason(t).starts_with(kept))
        .collect();
    assert_eq!(deferred.len(), 2, "two wait for the reservation");
    assert_eq!(w.running(), 1, "one normal task runs, one GPU is kept");
    let why = w.call(Why { id: deferred[0] }).unwrap();
    assert!(
        why.reason
            .as_deref()
            .is_some_and(|r| r.contains("reserve `urgent-day`")),
        "{why:?}"
    );
    let u = w.task(
        "urgent",
        &["sleep", "60"],
        &format!("priority = \"urgent\"\n{ONE_GPU}"),
    );
    w.pass();
    assert_eq!(w.state(u), TaskState::Running, "on the kept GPU");
    assert_eq!(w.running(), 2);
}

#[test]
fn a_lent_reservation_lets_normal_work_use_it_while_no_urgent_task_waits() {
    let w = world("lend = true\n");
    let ids: Vec<i64> = (0..3)
        .map(|i| w.task(&format!("t{i}"), &["sleep", "60"], ONE_GPU))
        .collect();
    w.pass();
    assert_eq!(w.running(), 2, "both GPUs are used");
    let queued = *ids
        .iter()
        .find(|&&t| w.state(t) == TaskState::Queued)
        .expect("one waits");
    assert!(
        !w.reason(queued).contains("reserve `"),
        "waits for a GPU, not the reservation: {}",
        w.reason(queued)
    );
}

#[test]
fn a_reservation_larger_than_the_machine_keeps_every_gpu_and_says_which_key() {
    let w = World::new(
        "slots = 8\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n\
         [plugins]\nchain = [\"reserve\"]\n[plugin.reserve.config.huge]\ngpus = 3\nfor_priorities = [\"urgent\"]\n",
    );
    let t = w.task("t", &["sleep", "60"], ONE_GPU);
    w.pass();
    assert_eq!(w.state(t), TaskState::Queued);
    let reason = w.reason(t);
    assert!(
        reason.contains("key `huge.gpus` is 3, more than the 2 GPU(s) here"),
        "{reason}"
    );
}
