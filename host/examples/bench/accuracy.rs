//! `accuracy [TASKS]`: how far the simulator and the forecast are from
//! what a real daemon did. A daemon on 4 simulated GPUs runs TASKS (60)
//! real `sleep` tasks of 0.3-2.0 s on 1-3 GPUs, submitted in bursts (so
//! they queue and backfill), each estimated by the median of its name's
//! earlier runs (a warm-up runs each name once first). Right after each
//! submit, `estimate` forecasts its start. When all have ended, the day is
//! taken back as a trace (`run-trace`) and replayed by `nightjard simulate`
//! under the same config. Reported: the median and p95 of |simulated start -
//! real start| over the runs, and of |forecast start - real start| over the
//! tasks, against the naive forecast "it starts when submitted" (the
//! baseline, same run).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nightjar::api;

use super::{Daemon, entries, nightjar_bin};

/// Durations, tenths of a second: names `d03` .. `d20`.
const TENTHS: std::ops::RangeInclusive<u64> = 3..=20;

/// The `p`th percentile (nearest rank) of `v`, ms.
fn pct(v: &[i64], p: f64) -> i64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    if v.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

/// A task file for a `sleep` of `tenths` on `gpus`.
fn task(tenths: u64, gpus: u64) -> Result<Vec<nightjar::task::model::NewEntry>> {
    entries(&format!(
        "name = \"d{tenths:02}\"\ncommand = \"sleep {}.{}\"\nresources = {{ gpus = {gpus} }}\n",
        tenths / 10,
        tenths % 10
    ))
}

/// Waits until no task is queued or running.
fn drain(c: &mut nightjar_core::client::Client) -> Result<()> {
    let t0 = Instant::now();
    loop {
        let rows = c.call(api::TaskList::default())?;
        let busy = rows.iter().any(|r| {
            matches!(
                r.state,
                api::wire::TaskState::Queued | api::wire::TaskState::Running
            )
        });
        if !busy {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(300) {
            bail!("the tasks did not end within 5 minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn accuracy(tasks: usize) -> Result<()> {
    println!("== accuracy: {tasks} real tasks on 4 simulated GPUs, replayed and forecast ==");
    let d = Daemon::start(
        "slots = 8\n[plugins]\nchain = []\n[gpu]\nbackend = \"sim:4xA100-80GB\"\nsample_period = \"200ms\"\nhost_mem_min_free = \"1MiB\"\n",
    )?;
    let mut c = d.client()?;
    // Warm-up: each name once, so every estimate is a median of one run.
    let warm: Vec<_> = TENTHS.map(|t| task(t, 1)).collect::<Result<Vec<_>>>()?;
    let _: Vec<i64> = c.call(api::Submit {
        entries: warm.into_iter().flatten().collect(),
        verify: false,
    })?;
    drain(&mut c)?;
    let from = nightjar_core::time::now_ms();
    let mut forecast: Vec<(i64, Option<i64>, i64)> = Vec::new();
    for i in 0..tasks {
        let tenths = TENTHS.start() + (i as u64 * 7) % (TENTHS.end() - TENTHS.start() + 1);
        let gpus = 1 + (i as u64 * 5) % 3;
        let ids: Vec<i64> = c.call(api::Submit {
            entries: task(tenths, gpus)?,
            verify: false,
        })?;
        let submitted = nightjar_core::time::now_ms();
        let f = c.call(api::Forecast {
            ids: ids.clone(),
            entries: Vec::new(),
            brief: false,
        })?;
        forecast.push((ids[0], f.tasks.first().and_then(|t| t.start), submitted));
        // Bursts of six, a second apart: a queue forms and drains.
        if i % 6 == 5 {
            std::thread::sleep(Duration::from_millis(1000));
        }
    }
    drain(&mut c)?;
    let to = nightjar_core::time::now_ms();
    let rows = c.call(api::RunTrace { from, to })?;
    if rows.rows.len() != tasks {
        bail!("the trace holds {} runs, not {tasks}", rows.rows.len());
    }
    let dir = tempfile::tempdir()?;
    let trace = dir.path().join("day.csv");
    let schedule = dir.path().join("schedule.csv");
    std::fs::write(&trace, rows.csv())?;
    let out = std::process::Command::new(nightjar_bin()?.with_file_name("nightjard"))
        .arg("--config")
        .arg(&d.config)
        .args(["simulate", "--schedule"])
        .arg(&schedule)
        .arg(&trace)
        .output()?;
    if !out.status.success() {
        bail!("simulate failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    // id,start_s,end_s,... per run: |simulated - real| start.
    let text = std::fs::read_to_string(&schedule)?;
    let mut replay = Vec::new();
    for line in text.lines().skip(1) {
        let mut f = line.split(',');
        let id: i64 = f.next().context("id")?.parse()?;
        let start: f64 = f.next().context("start_s")?.parse()?;
        let real = rows
            .rows
            .iter()
            .find(|r| r.run == id)
            .context("a scheduled run has its row")?;
        let sim = from + (start * 1000.0).round() as i64;
        replay.push((sim - real.started_at).abs());
    }
    let started = |task: i64| {
        rows.rows
            .iter()
            .find(|r| r.task == task)
            .map(|r| r.started_at)
    };
    let (mut fc, mut naive, mut unknown) = (Vec::new(), Vec::new(), 0);
    for (task, start, submitted) in &forecast {
        let Some(real) = started(*task) else { continue };
        naive.push((real - submitted).abs());
        match start {
            Some(s) => fc.push((s - real).abs()),
            None => unknown += 1,
        }
    }
    let waited: Vec<i64> = rows
        .rows
        .iter()
        .map(|r| r.started_at - r.eligible_at)
        .collect();
    println!(
        "  {} runs; waits p50 {} ms, p95 {} ms, max {} ms",
        rows.rows.len(),
        pct(&waited, 50.0),
        pct(&waited, 95.0),
        pct(&waited, 100.0)
    );
    println!(
        "  simulate --history replay: |simulated - real start| p50 {} ms, p95 {} ms, max {} ms",
        pct(&replay, 50.0),
        pct(&replay, 95.0),
        pct(&replay, 100.0)
    );
    println!(
        "  estimate at submit: |forecast - real start| p50 {} ms, p95 {} ms ({} of {} known)",
        pct(&fc, 50.0),
        pct(&fc, 95.0),
        fc.len(),
        fc.len() + unknown
    );
    println!(
        "  baseline \"starts when submitted\": p50 {} ms, p95 {} ms (forecast/baseline p95: {:.2}x)",
        pct(&naive, 50.0),
        pct(&naive, 95.0),
        pct(&fc, 95.0) as f64 / pct(&naive, 95.0).max(1) as f64
    );
    Ok(())
}
