//! `estimate [TASKS]`: `nightjar estimate` of the last of TASKS (1,000)
//! waiting tasks, of every one, and `ls --wide` (which forecasts every
//! waiting task for its ETA column), side by side with `nightjar ls` of the
//! same queue on the same daemon (the baseline: one read of the store).
//! Eight simulated GPUs, each held by a run with a two-hour timeout; the
//! holding runs are urgent (past the tariff's deferral); the waiting tasks ask 1 to 4 GPUs for 10 minutes to 3 hours (fixed,
//! varied by index). Once with the built-in order, once through the
//! four-policy chain of `examples/lab.toml` (priority, offpeak-tariff,
//! fair-share, thermal).

use std::time::Instant;

use anyhow::Result;
use nightjar::api;

use super::vs::nightjar;
use super::{Daemon, entries, median};

/// Median wall time, ms, of 11 runs of `nightjar ARGS` against `d`.
fn timed(d: &Daemon, args: &[&str]) -> Result<f64> {
    let mut t = Vec::new();
    for _ in 0..11 {
        let s = Instant::now();
        nightjar(d, args)?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(&t))
}

/// Eight urgent two-hour runs, one on each of the daemon's eight simulated
/// GPUs, started before this returns: what comes after them waits.
pub(super) fn hold_every_gpu(d: &Daemon, c: &mut nightjar_core::client::Client) -> Result<()> {
    let hold = entries(
        "name = \"hold\"\ncommand = \"sleep 3600\"\npriority = \"urgent\"\nresources = { gpus = 1, timeout = \"2h\" }\n",
    )?;
    let _: Vec<i64> = c.call(api::Submit {
        entries: (0..8).flat_map(|_| hold.clone()).collect(),
        verify: false,
    })?;
    let t0 = Instant::now();
    while super::vs::nightjar_text(d, &["ls", "--state", "running"])?
        .lines()
        .count()
        < 9
    {
        anyhow::ensure!(
            t0.elapsed().as_secs() < 30,
            "the eight holding runs did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(())
}

/// Waiting task `i` of the benches' queues: 1 to 4 GPUs for 10 minutes to
/// 3 hours, in 50 names and 3 projects (fixed, varied by index).
pub(super) fn waiting_task(i: usize) -> Result<Vec<nightjar::task::model::NewEntry>> {
    entries(&format!(
        "name = \"job-{}\"\nproject = \"p{}\"\ncommand = \"true\"\nresources = {{ gpus = {}, timeout = \"{}m\" }}\n",
        i % 50,
        i % 3,
        1 + i % 4,
        10 + (i * 37) % 170
    ))
}

/// One daemon under `chain`: the queue, then the four timings.
fn round(tasks: usize, chain: &str, what: &str) -> Result<()> {
    let d = Daemon::start(&format!(
        "slots = 16\ntimezone = \"Asia/Shanghai\"\n[gpu]\nbackend = \"sim:8xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n[plugins]\nchain = {chain}\nurgent_bypass = [\"offpeak-tariff\"]\n[tariff]\ncurrency = \"CNY\"\nprice = 1.20\n[[tariff.windows]]\nfrom = \"23:00\"\nto = \"07:00\"\nprice = 0.35\n"
    ))?;
    let mut c = d.client()?;
    hold_every_gpu(&d, &mut c)?;
    let mut batch = Vec::new();
    for i in 0..tasks {
        batch.extend(waiting_task(i)?);
    }
    let ids: Vec<i64> = c.call(api::Submit {
        entries: batch,
        verify: false,
    })?;
    let last = ids.last().copied().unwrap_or_default().to_string();
    let ls = timed(&d, &["ls", "--limit", "0"])?;
    let one = timed(&d, &["estimate", &last])?;
    let all = timed(&d, &["estimate"])?;
    let wide = timed(&d, &["ls", "--limit", "0", "--wide"])?;
    let report: serde_json::Value =
        serde_json::from_str(&super::vs::nightjar_text(&d, &["--json", "estimate"])?)?;
    let passes = report["passes"].as_u64().unwrap_or_default();
    let chain = report["chain_passes"].as_u64().unwrap_or_default();
    println!("  {what}: {passes} passes ({chain} asked the chain)");
    println!("    nightjar ls (baseline)       {ls:7.1} ms");
    println!(
        "    estimate LAST                {one:7.1} ms  ({:.1}x ls; goal < 200 ms)",
        one / ls
    );
    println!(
        "    estimate (every task)        {all:7.1} ms  ({:.1}x ls)",
        all / ls
    );
    println!(
        "    ls --wide (ETA column)       {wide:7.1} ms  ({:.1}x ls)",
        wide / ls
    );
    Ok(())
}

pub fn estimate(tasks: usize) -> Result<()> {
    println!(
        "== estimate: {tasks} waiting tasks on 8 simulated GPUs held by 2 h runs; median of 11 calls =="
    );
    round(tasks, "[]", "built-in order, EASY backfill")?;
    round(
        tasks,
        "[\"priority\", \"offpeak-tariff\", \"fair-share\", \"thermal\"]",
        "four-policy chain, EASY backfill",
    )
}
