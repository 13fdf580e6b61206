//! The crash loop: mixed tasks (instant, short, long, failing) while the
//! daemon is killed (-9) again and again at random moments and restarted.
//! Counted: tasks lost (not ended as their command says), run twice, or
//! never ended. In the suite 100 tasks and 15 kills; `scripts/chaos`: 300
//! and 30, at 0.3-3 s.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::harness::{Nj, chaos_row, chaos_scale};

#[test]
fn a_crash_loop_loses_nothing_runs_nothing_twice_and_leaves_nothing_hung() {
    let tasks = chaos_scale(100, 300);
    let kills = chaos_scale(15, 30);
    let max_gap_ms = chaos_scale(1_000, 3_000) as u64;
    let mut nj = Nj::new("slots = 4");
    nj.start();
    let ran = nj.path("marks").join("ran.log");
    // A fixed sequence (a small LCG): the same loop every run.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) % n
    };
    let mut want: Vec<(i64, i32)> = Vec::new();
    for i in 0..tasks {
        let (body, code) = match i % 5 {
            0 => ("true", 0),
            1 => ("sleep 0.2", 0),
            2 => ("sleep 0.6", 0),
            3 => ("sleep 1.5", 0),
            _ => ("exit 1", 1),
        };
        let line = format!("echo $NIGHTJAR_TASK_ID >> {}; {body}", ran.display());
        want.push((nj.submit(&["--", "sh", "-c", &line]), code));
    }
    for _ in 0..kills {
        std::thread::sleep(Duration::from_millis(300 + next(max_gap_ms - 300)));
        nj.kill9();
        nj.start();
    }
    let t0 = Instant::now();
    let ended = |s: &serde_json::Value| matches!(s.as_str(), Some("succeeded" | "failed"));
    let mut open: Vec<(i64, i32)> = want.clone();
    let mut lost = 0;
    while !open.is_empty() && t0.elapsed() < Duration::from_secs(240) {
        open.retain(|&(id, code)| {
            let t = nj.show(id);
            if !ended(&t["task"]["state"]) {
                return true;
            }
            let last = t["runs"]
                .as_array()
                .and_then(|r| r.last())
                .cloned()
                .unwrap_or_default();
            if last["exit_code"].as_i64() != Some(i64::from(code)) {
                lost += 1;
                eprintln!("task {id}: wanted exit {code}, got {last}");
            }
            false
        });
        std::thread::sleep(Duration::from_millis(200));
    }
    let hung = open.len();
    let mut count: HashMap<i64, usize> = HashMap::new();
    for l in std::fs::read_to_string(&ran).unwrap_or_default().lines() {
        *count.entry(l.trim().parse().unwrap()).or_default() += 1;
    }
    let doubled = want
        .iter()
        .filter(|(id, _)| count.get(id).copied().unwrap_or(0) > 1)
        .count();
    let never = want
        .iter()
        .filter(|(id, _)| !count.contains_key(id))
        .count();
    chaos_row(
        &format!("crash loop ({kills} kill -9)"),
        tasks,
        lost + never,
        doubled,
        hung,
    );
    assert_eq!(
        (lost, never, doubled, hung),
        (0, 0, 0, 0),
        "lost, never ran, doubled, hung"
    );
}
