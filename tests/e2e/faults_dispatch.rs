//! Faults at dispatch: the daemon killed (-9) within 0-40 ms of a submit,
//! while runs are being claimed and their supervisors launched. A run
//! whose supervisor never reached the task is given back without spending
//! an attempt, so with the CLI's default of one attempt no task fails
//! without having run, none runs twice, and none is lost.

use std::collections::HashMap;
use std::time::Duration;

use crate::harness::{Nj, chaos_row, chaos_scale};

#[test]
fn kill_9_right_at_dispatch_spends_no_attempt_loses_nothing_and_runs_nothing_twice() {
    let mut nj = Nj::new("slots = 4");
    nj.start();
    let ran = nj.path("marks").join("ran.log");
    let line = format!("echo $NIGHTJAR_TASK_ID >> {}", ran.display());
    // A fixed sequence of delays (a small LCG): the same kills every run.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut ids = Vec::new();
    let kills = chaos_scale(15, 30);
    for _ in 0..kills {
        for _ in 0..4 {
            ids.push(nj.submit(&["--", "sh", "-c", &line]));
        }
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        std::thread::sleep(Duration::from_millis((seed >> 33) % 41));
        nj.kill9();
        nj.start();
    }
    for &id in &ids {
        let code = nj.wait_within(id, Duration::from_secs(120));
        assert_eq!(code, 0, "task {id}: {}", nj.show(id));
    }
    let mut count: HashMap<i64, usize> = HashMap::new();
    for l in std::fs::read_to_string(&ran).unwrap().lines() {
        *count.entry(l.trim().parse().unwrap()).or_default() += 1;
    }
    let doubled = ids
        .iter()
        .filter(|id| count.get(id).copied().unwrap_or(0) > 1)
        .count();
    let never = ids.iter().filter(|id| !count.contains_key(id)).count();
    chaos_row(
        &format!("kill -9 within 0-40 ms of a submit ({kills}x)"),
        ids.len(),
        never,
        doubled,
        0,
    );
    for &id in &ids {
        assert_eq!(count.get(&id), Some(&1), "task {id} ran once");
    }
    // Runs given back say so; none of them counted as the task's attempt.
    let given: usize = ids
        .iter()
        .map(|&id| {
            nj.show(id)["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| {
                    r["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("never started"))
                })
                .count()
        })
        .sum();
    println!(
        "runs given back after a kill at dispatch: {given} of {} tasks",
        ids.len()
    );
}
