use super::*;
use crate::gpu::GpuProcess;

fn cfg() -> MonitorConfig {
    MonitorConfig {
        foreign_util_max: 15,
        foreign_quiet_ms: 5_000,
        host_mem_min_free: 16 << 30,
        stall_after_ms: 60_000,
        series_every_ms: 10_000,
    }
}

fn info(i: u32) -> GpuInfo {
    GpuInfo {
        index: i,
        uuid: format!("GPU-{i}"),
        name: "A100".into(),
        mem_total: 80 << 30,
    }
}

fn reading(util: u32, procs: &[(u32, u64)]) -> GpuReading {
    GpuReading {
        util,
        util_mem: 0,
        mem_used: procs.iter().map(|p| p.1).sum(),
        temp_c: 50 + util / 10,
        power_mw: 100_000,
        energy_mj: None,
        processes: procs
            .iter()
            .map(|&(pid, mem)| GpuProcess { pid, mem })
            .collect(),
    }
}

#[test]
fn foreign_load_closes_a_gpu_until_quiet_for_the_configured_time() {
    let mut m = Monitor::new(&[info(0)], cfg());
    let none = |_: u32| None;
    let host = Some(64u64 << 30);
    m.apply(
        0,
        vec![(0, Ok(reading(80, &[(99, 4 << 30)])))],
        &[],
        &none,
        host,
    );
    assert!(!m.gpus[0].open);
    assert_eq!(m.gpus[0].foreign_mem, 4 << 30);
    m.apply(
        1_000,
        vec![(0, Ok(reading(5, &[(99, 4 << 30)])))],
        &[],
        &none,
        host,
    );
    assert!(!m.gpus[0].open, "quiet for 1 s only");
    m.apply(
        6_000,
        vec![(0, Ok(reading(5, &[(99, 4 << 30)])))],
        &[],
        &none,
        host,
    );
    assert!(
        m.gpus[0].open,
        "quiet for 5 s: offered, its memory still counted"
    );
    m.apply(
        7_000,
        vec![(0, Ok(reading(5, &[])))],
        &[],
        &none,
        Some(8 << 30),
    );
    assert!(!m.gpus[0].open, "host memory low");
}

#[test]
fn a_gpu_never_busy_with_foreign_load_is_offered_at_once() {
    let mut m = Monitor::new(&[info(0)], cfg());
    m.apply(0, vec![(0, Ok(reading(0, &[])))], &[], &|_| None, None);
    assert!(m.gpus[0].open);
}

#[test]
fn failing_reads_mark_unhealthy_and_close() {
    let mut m = Monitor::new(&[info(0)], cfg());
    m.apply(
        0,
        vec![(0, Err("GPU is lost".into()))],
        &[],
        &|_| None,
        None,
    );
    assert!(!m.gpus[0].healthy && !m.gpus[0].open);
    assert!(
        m.gpus[0]
            .closed_reason
            .as_deref()
            .unwrap()
            .contains("GPU is lost")
    );
}

#[test]
fn run_records_peak_memory_utilisation_and_energy_from_power() {
    let mut m = Monitor::new(&[info(0)], cfg());
    let run = RunOnGpus {
        run: 1,
        gpus: vec![0],
        session: 10,
        log_bytes: 0,
    };
    let owner = |pid: u32| (pid == 11).then_some(1);
    for (t, util, mem) in [
        (0, 20, 1u64 << 30),
        (1_000, 60, 3 << 30),
        (2_000, 40, 2 << 30),
    ] {
        m.apply(
            t,
            vec![(0, Ok(reading(util, &[(11, mem), (99, 5 << 30)])))],
            std::slice::from_ref(&run),
            &owner,
            None,
        );
    }
    let rec = m.take_records(1);
    assert_eq!(rec.len(), 1);
    assert_eq!(
        rec[0].mem_peak,
        3 << 30,
        "only the run's own process counts"
    );
    assert_eq!(rec[0].util_max, 60);
    assert!((rec[0].util_mean - 40.0).abs() < 1e-9);
    assert!((rec[0].energy_j - 200.0).abs() < 1e-9, "100 W for 2 s");
    assert_eq!(rec[0].energy_source, "power");
}

#[test]
fn no_utilisation_and_no_log_growth_marks_stalled_and_activity_clears_it() {
    let mut m = Monitor::new(&[info(0)], cfg());
    let owner = |_: u32| Some(1);
    let run = |log| RunOnGpus {
        run: 1,
        gpus: vec![0],
        session: 10,
        log_bytes: log,
    };
    let fx = m.apply(0, vec![(0, Ok(reading(0, &[])))], &[run(5)], &owner, None);
    assert!(fx.stall_changes.is_empty());
    let fx = m.apply(
        61_000,
        vec![(0, Ok(reading(0, &[])))],
        &[run(5)],
        &owner,
        None,
    );
    assert_eq!(fx.stall_changes, vec![(1, true)]);
    let fx = m.apply(
        62_000,
        vec![(0, Ok(reading(0, &[])))],
        &[run(9)],
        &owner,
        None,
    );
    assert_eq!(
        fx.stall_changes,
        vec![(1, false)],
        "log growth is a sign of life"
    );
}

#[test]
fn a_gpus_energy_is_its_counter_where_it_has_one_else_its_power_summed_with_gaps_capped() {
    let mut m = Monitor::new(&[info(0), info(1)], cfg());
    let none = |_: u32| None;
    assert_eq!(m.energy_j(0), None, "nothing before the first reading");
    let counted = |mj| GpuReading {
        energy_mj: Some(mj),
        ..reading(0, &[])
    };
    m.apply(
        0,
        vec![(0, Ok(reading(0, &[]))), (1, Ok(counted(5_000)))],
        &[],
        &none,
        None,
    );
    assert_eq!(m.energy_j(0), Some(0.0));
    // 100 W for 2 s.
    m.apply(
        2_000,
        vec![(0, Ok(reading(0, &[]))), (1, Ok(counted(9_000)))],
        &[],
        &none,
        None,
    );
    assert_eq!(m.energy_j(0), Some(200.0));
    assert_eq!(m.energy_j(1), Some(9.0), "the driver's counter, in J");
    // A read that fails adds nothing; an hour's gap adds at most a minute.
    m.apply(3_000, vec![(0, Err("gone".into()))], &[], &none, None);
    m.apply(3_602_000, vec![(0, Ok(reading(0, &[])))], &[], &none, None);
    assert_eq!(m.energy_j(0), Some(200.0 + 6_000.0));
}
