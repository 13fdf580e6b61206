//! Reading a node's samples as they grow.

use std::io::Write as _;

use super::super::node::tests::gpu;
use super::*;

/// The node reader's tests' thresholds, a stall after 10 s.
fn cfg() -> MonitorConfig {
    MonitorConfig {
        stall_after_ms: 10_000,
        ..super::super::node::tests::cfg()
    }
}

fn round(at: i64, util: u32) -> String {
    let reading = GpuReading {
        util,
        util_mem: 0,
        mem_used: 1 << 30,
        temp_c: 40 + util / 10,
        power_mw: 300_000,
        energy_mj: None,
        processes: vec![],
    };
    let line = Line::Round {
        at,
        readings: vec![(3, reading)],
        mine: vec![],
        failed: vec![],
    };
    serde_json::to_string(&line).unwrap() + "\n"
}

fn append(dir: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(SAMPLES))
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn gpus_line() -> String {
    serde_json::to_string(&Line::Gpus { gpus: vec![gpu(3)] }).unwrap() + "\n"
}

#[test]
fn each_poll_reads_the_rounds_appended_since_and_keeps_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let mut live = Live::new(7, cfg());
    assert_eq!(live.read(dir.path(), 0), None, "no file yet");
    assert!(live.last.is_none());
    append(dir.path(), &(gpus_line() + &round(1_000, 50)));
    // The sampler in the middle of its next line.
    let next = round(2_000, 70);
    append(dir.path(), &next[..10]);
    live.read(dir.path(), 0);
    let last = live.last.clone().expect("a round");
    assert_eq!(last.at, 1_000, "only whole lines");
    assert_eq!(last.gpus.len(), 1);
    assert_eq!(last.gpus[0].0.index, 3);
    assert_eq!(last.gpus[0].1.as_ref().map(|r| r.util), Some(50));
    append(dir.path(), &next[10..]);
    live.read(dir.path(), 0);
    let last = live.last.clone().expect("a round");
    assert_eq!(last.at, 2_000, "the rest of the cut line, once whole");
    assert_eq!(last.gpus[0].1.as_ref().map(|r| r.util), Some(70));
}

#[test]
fn idle_gpus_and_still_logs_mark_the_run_stalled_until_either_moves() {
    let dir = tempfile::tempdir().unwrap();
    let mut live = Live::new(7, cfg());
    append(dir.path(), &(gpus_line() + &round(0, 0) + &round(5_000, 0)));
    assert_eq!(live.read(dir.path(), 100), None, "idle 5 s of the 10");
    append(dir.path(), &round(10_000, 0));
    assert_eq!(live.read(dir.path(), 100), Some(true), "idle for 10 s");
    append(dir.path(), &round(11_000, 0));
    assert_eq!(live.read(dir.path(), 100), None, "said once");
    append(dir.path(), &round(12_000, 0));
    assert_eq!(
        live.read(dir.path(), 250),
        Some(false),
        "its logs grew: active again"
    );
    append(dir.path(), &(round(30_000, 0) + &round(31_000, 60)));
    assert_eq!(
        live.read(dir.path(), 250),
        None,
        "stalled at 30 s and busy again at 31 s, read at once: no change to record"
    );
    append(dir.path(), &(round(50_000, 0) + &round(60_000, 0)));
    assert_eq!(live.read(dir.path(), 250), Some(true));
}

#[test]
fn a_samples_file_that_is_a_link_or_was_rewritten_is_not_trusted_for_more_than_it_says() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    append(elsewhere.path(), &(gpus_line() + &round(1_000, 90)));
    std::os::unix::fs::symlink(elsewhere.path().join(SAMPLES), dir.path().join(SAMPLES)).unwrap();
    let mut live = Live::new(7, cfg());
    live.read(dir.path(), 0);
    assert!(live.last.is_none(), "not read through a link");
    std::fs::remove_file(dir.path().join(SAMPLES)).unwrap();
    append(
        dir.path(),
        &(gpus_line() + &round(1_000, 10) + &round(2_000, 20)),
    );
    live.read(dir.path(), 0);
    assert_eq!(live.last.as_ref().map(|l| l.at), Some(2_000));
    // Rewritten shorter: read from its start again.
    std::fs::write(dir.path().join(SAMPLES), gpus_line() + &round(500, 5)).unwrap();
    live.read(dir.path(), 0);
    assert_eq!(live.last.as_ref().map(|l| l.at), Some(500));
}

#[test]
fn a_reader_far_behind_reads_the_gpus_and_the_recent_rounds_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = gpus_line();
    let mut at = 0;
    while text.len() as u64 <= STEP + (1 << 20) {
        text.push_str(&round(at, 1));
        at += 1_000;
    }
    append(dir.path(), &text);
    let mut live = Live::new(7, cfg());
    live.read(dir.path(), 0);
    let last = live.last.clone().expect("the recent rounds");
    assert_eq!(last.at, at - 1_000);
    assert_eq!(last.gpus[0].0, gpu(3), "the GPUs from the first line");
    append(dir.path(), &round(at, 2));
    live.read(dir.path(), 0);
    assert_eq!(live.last.as_ref().map(|l| l.at), Some(at));
}

#[test]
fn a_samples_file_grown_while_read_is_read_no_further_than_its_length_then() {
    // The owner's file, grown (sparse, no newline) while the daemon reads:
    // a read finds it longer than its length just said.
    let dir = tempfile::tempdir().unwrap();
    append(dir.path(), &gpus_line());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join(SAMPLES))
        .unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let grower = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            for mib in 5..=512u64 {
                let _ = file.set_len(mib << 20);
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
        })
    };
    let mut live = Live::new(7, cfg());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            live.read(dir.path(), 0);
        }
    }));
    grower.join().unwrap();
    assert!(outcome.is_ok(), "a read of a growing file failed");
}

#[test]
fn forged_rounds_with_extreme_times_and_sizes_are_read_without_overflow() {
    // The samples file of a job that is its owner's is the owner's to
    // write: times out of order at the ends of the range, memory sizes
    // that overflow a sum, every field at its maximum.
    let dir = tempfile::tempdir().unwrap();
    let reading = |mem: u64| GpuReading {
        util: u32::MAX,
        util_mem: u32::MAX,
        mem_used: u64::MAX,
        temp_c: u32::MAX,
        power_mw: u32::MAX,
        energy_mj: Some(u64::MAX),
        processes: vec![
            crate::gpu::GpuProcess { pid: 1, mem },
            crate::gpu::GpuProcess { pid: 2, mem },
        ],
    };
    let line = |at: i64, util: u32| {
        let mut r = reading(u64::MAX);
        r.util = util;
        serde_json::to_string(&Line::Round {
            at,
            readings: vec![(3, r)],
            mine: vec![1],
            failed: vec![],
        })
        .unwrap()
            + "\n"
    };
    append(
        dir.path(),
        &(gpus_line() + &line(i64::MAX, 0) + &line(i64::MIN, 0) + &line(i64::MAX, 5) + &line(0, 0)),
    );
    let mut live = Live::new(7, cfg());
    live.read(dir.path(), u64::MAX);
    assert_eq!(live.last.as_ref().map(|l| l.at), Some(0), "read to the end");
    // The run's record at its end goes through the same monitor.
    let cfg = cfg();
    let got = super::super::node::read(dir.path(), 7, cfg, None).expect("samples");
    assert_eq!(got.records.len(), 1);
}
