use std::io::Write as _;

use super::*;
use crate::gpu::GpuProcess;

pub(in crate::gpu) fn cfg() -> MonitorConfig {
    MonitorConfig {
        foreign_util_max: 15,
        foreign_quiet_ms: 5_000,
        host_mem_min_free: 0,
        stall_after_ms: 600_000,
        series_every_ms: 1_000,
    }
}

pub(in crate::gpu) fn gpu(index: u32) -> GpuInfo {
    GpuInfo {
        index,
        uuid: format!("GPU-{index}"),
        name: "NVIDIA H200".into(),
        mem_total: 141 << 30,
    }
}

fn reading(util: u32, energy_mj: u64, procs: &[(u32, u64)]) -> GpuReading {
    GpuReading {
        util,
        util_mem: 0,
        mem_used: procs.iter().map(|p| p.1).sum(),
        temp_c: 40 + util / 10,
        power_mw: 300_000,
        energy_mj: Some(energy_mj),
        processes: procs
            .iter()
            .map(|&(pid, mem)| GpuProcess { pid, mem })
            .collect(),
    }
}

fn write(dir: &Path, lines: &[Line], tail: &str) {
    let mut text: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    text.push_str(tail);
    std::fs::write(dir.join(SAMPLES), text).unwrap();
}

#[test]
fn a_nodes_rounds_make_the_record_a_local_run_would_get() {
    let dir = tempfile::tempdir().unwrap();
    // The run's pid 10 holds 40 GiB; pid 99 (someone else's) 8 GiB.
    let round = |at: i64, util: u32, energy: u64| Line::Round {
        at,
        readings: vec![(2, reading(util, energy, &[(10, 40 << 30), (99, 8 << 30)]))],
        mine: vec![10],
        failed: vec![],
    };
    write(
        dir.path(),
        &[
            Line::Gpus { gpus: vec![gpu(2)] },
            round(1_000, 50, 1_000_000),
            round(2_000, 100, 1_500_000),
            round(3_000, 90, 2_000_000),
        ],
        // A node that failed mid-line: the cut line is skipped.
        "{\"kind\":\"round\",\"at\":4000,\"readi",
    );
    let got = read(dir.path(), 7, cfg(), None).expect("samples");
    assert_eq!(got.records.len(), 1);
    let r = &got.records[0];
    assert_eq!((r.run, r.gpu, r.uuid.as_str()), (7, 2, "GPU-2"));
    assert_eq!(r.samples, 3);
    assert_eq!(r.mem_peak, 40 << 30, "only the run's own process counts");
    assert_eq!(r.util_max, 100);
    assert_eq!(r.energy_source, "counter");
    assert!((r.energy_j - 1_000.0).abs() < 1e-9, "{}", r.energy_j);
    assert!(!got.series.is_empty(), "a series is kept");
    assert!(got.series.iter().all(|p| p.run == 7 && p.gpu == 2));
}

#[test]
fn no_samples_file_or_no_gpus_line_gives_nothing() {
    let dir = tempfile::tempdir().unwrap();
    assert!(read(dir.path(), 1, cfg(), None).is_none());
    write(
        dir.path(),
        &[Line::Round {
            at: 1,
            readings: vec![(0, reading(1, 1, &[]))],
            mine: vec![],
            failed: vec![],
        }],
        "",
    );
    assert!(read(dir.path(), 1, cfg(), None).is_none());
}

#[test]
fn the_jobs_gpus_are_found_by_index_or_uuid_and_an_unknown_one_is_named() {
    let inventory = [gpu(0), gpu(1), gpu(2)];
    let idx = |v: &str| {
        job_gpus(&inventory, v)
            .unwrap()
            .iter()
            .map(|g| g.index)
            .collect::<Vec<_>>()
    };
    assert_eq!(idx("2,0"), [2, 0]);
    assert_eq!(idx("GPU-1"), [1]);
    assert_eq!(idx(""), Vec::<u32>::new());
    let err = job_gpus(&inventory, "0,7").unwrap_err().to_string();
    assert!(err.contains("`7`"), "{err}");
}

#[test]
fn node_gpus_takes_nvml_or_none_and_refuses_simulated_gpus() {
    for ok in ["auto", "nvml", "nvml:/usr/lib/libnvidia-ml.so.1", "none"] {
        assert!(check_backend(ok).is_ok(), "{ok}");
    }
    let err = check_backend("sim:2xA100-80GB").unwrap_err().to_string();
    assert!(err.contains("executor.node_gpus"), "{err}");
    assert!(check_backend("cuda").is_err());
    assert!(!wanted("none") && wanted("auto"));
}

#[test]
fn the_session_test_knows_this_process_and_refuses_a_gone_pid() {
    // SAFETY: getsid(0) asks for this process's session.
    let mine = unsafe { libc::getsid(0) } as u32;
    assert!(in_session(std::process::id(), mine));
    assert!(!in_session(u32::MAX, mine), "no such pid");
}

#[test]
fn a_child_descends_from_this_process_and_this_process_not_from_its_child() {
    let mut child = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let me = std::process::id();
    assert!(descends_from(child.id(), me));
    assert!(!descends_from(me, child.id()));
    assert!(!descends_from(u32::MAX, me), "no such pid");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn an_h200s_samples_from_gpu_check_give_the_runs_peak_and_its_counter_energy() {
    // Written by `nightjard gpu-sample` on an NVIDIA H200 (driver
    // 580.159.04, scripts/gpu-check, 2026-12-04): a process of the run held
    // 46.5 GiB for 6 s.
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/h200-gpu-samples.jsonl"
    );
    std::fs::copy(fixture, dir.path().join(SAMPLES)).unwrap();
    let got = read(dir.path(), 1, cfg(), None).expect("samples");
    let r = &got.records[0];
    assert_eq!(r.uuid, "GPU-ba57bb75-273b-5b0b-d59f-5408432dafc7");
    assert_eq!(r.samples, 33);
    assert_eq!(r.mem_peak, 49_935_286_272);
    assert_eq!(r.energy_source, "counter");
    assert!((r.energy_j - 3_932.545).abs() < 1e-6, "{}", r.energy_j);
    let energy = got.energy.expect("the run's energy");
    assert!(energy.energy_j > 0.0, "{energy:?}");
}

#[test]
fn a_failed_reading_is_not_counted_as_the_last_good_one_again() {
    let dir = tempfile::tempdir().unwrap();
    let ok = |at: i64| Line::Round {
        at,
        readings: vec![(0, reading(100, 1_000_000 + at as u64, &[(10, 1 << 30)]))],
        mine: vec![10],
        failed: vec![],
    };
    let lost = |at: i64| Line::Round {
        at,
        readings: vec![],
        mine: vec![],
        failed: vec![(0, "NVML GPU 0: GPU is lost".into())],
    };
    write(
        dir.path(),
        &[
            Line::Gpus { gpus: vec![gpu(0)] },
            ok(1_000),
            ok(2_000),
            lost(3_000),
            lost(4_000),
        ],
        "",
    );
    let got = read(dir.path(), 3, cfg(), None).expect("samples");
    assert_eq!(got.records[0].samples, 2, "{:?}", got.records);
}

#[test]
fn the_budget_halves_the_rounds_written_as_it_fills_and_never_passes_its_total() {
    let mut b = Budget::new(1 << 20);
    let mut written = 0u64;
    for round in 0..1_000_000u64 {
        if b.takes(round) {
            b.spent(300);
            written += 1;
        }
    }
    assert!(b.used <= 1 << 20, "{b:?}");
    assert!(b.stride > 1, "{b:?}");
    // Everything until half the budget: 1,747 lines of 300 bytes.
    assert!(written > 1_747 && written < 3_500, "{written}");
}

#[test]
fn a_file_past_what_is_read_keeps_its_gpus_and_its_last_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(SAMPLES);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let first = serde_json::to_string(&Line::Gpus { gpus: vec![gpu(0)] }).unwrap();
    writeln!(f, "{first}").unwrap();
    let round = |at: i64, energy: u64| Line::Round {
        at,
        readings: vec![(0, reading(50, energy, &[(10, 1 << 30)]))],
        mine: vec![10],
        failed: vec![],
    };
    let filler = serde_json::to_string(&round(1, 5)).unwrap();
    let mut size = first.len() as u64;
    while size <= MAX_READ + (1 << 20) {
        writeln!(f, "{filler}").unwrap();
        size += filler.len() as u64 + 1;
    }
    for (at, energy) in [(10_000, 7_000_000), (11_000, 9_000_000)] {
        writeln!(f, "{}", serde_json::to_string(&round(at, energy)).unwrap()).unwrap();
    }
    drop(f);
    let got = read(dir.path(), 1, cfg(), None).expect("samples");
    let r = &got.records[0];
    assert!(r.samples > 2, "{r:?}");
    assert_eq!(r.uuid, "GPU-0", "the first line is kept");
    // From the first round read (energy 5) to the last (9,000,000 mJ).
    assert!((r.energy_j - 8_999.995).abs() < 1e-6, "{}", r.energy_j);
}

#[test]
fn a_link_or_a_fifo_in_place_of_the_samples_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, "{\"kind\":\"gpus\",\"gpus\":[]}\n").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join(SAMPLES)).unwrap();
    assert!(read(dir.path(), 1, cfg(), None).is_none());
    std::fs::remove_file(dir.path().join(SAMPLES)).unwrap();
    let fifo = std::ffi::CString::new(dir.path().join(SAMPLES).to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    assert!(
        read(dir.path(), 1, cfg(), None).is_none(),
        "no wait on a FIFO"
    );
}
