//! `rss [TASKS]`: the daemon's resident memory with TASKS (10,000) tasks
//! waiting, against the same daemon empty (the baseline, measured first in
//! the same run): after the submits and a few passes, then after a reader
//! (`nightjar ls` of the whole queue) and a forecast (`nightjar estimate`
//! of the last task, which plays the whole queue) have touched it. Eight simulated GPUs are held by urgent `sleep` runs,
//! so the rest wait; the default policy chain. Each figure is split as
//! Linux counts it (/proc/PID/status): anonymous memory (the heap, the
//! plugins' linear memory, SQLite's page cache) and file pages mapped (the
//! binary's code as far as it ran, the database where a reader maps it).
//! Beside it, the mean time of a pass over the whole queue (from the
//! daemon's own `/metrics`), so memory is not bought with pass time.

use std::time::Duration;

use anyhow::{Context, Result};
use nightjar::api;

use super::Daemon;
use super::dashboard::{free_port, get_raw};
use super::vs::nightjar_text;

/// (VmRSS, RssAnon, RssFile) of `pid`, KiB.
fn rss(pid: u32) -> Result<(u64, u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        (status.lines())
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_default()
    };
    Ok((field("VmRSS:"), field("RssAnon:"), field("RssFile:")))
}

fn row(what: &str, (total, anon, file): (u64, u64, u64)) {
    println!(
        "  {what:<44} {:6.1} MiB  (anonymous {:5.1}, file {:5.1})",
        total as f64 / 1024.0,
        anon as f64 / 1024.0,
        file as f64 / 1024.0
    );
}

/// `(sum of seconds, count)` of the daemon's pass durations so far.
fn passes(port: u16) -> Result<(f64, f64)> {
    let text = String::from_utf8(get_raw(port, "/metrics", None)?)?;
    let value = |name: &str| {
        (text.lines())
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
            .with_context(|| format!("no {name} in /metrics"))
    };
    Ok((
        value("nightjar_pass_duration_seconds_sum ")?,
        value("nightjar_pass_duration_seconds_count ")?,
    ))
}

/// The mean pass time, ms, of 20 passes over the whole queue, each woken by
/// a submit of a task that waits behind it.
fn mean_pass(d: &Daemon, c: &mut nightjar_core::client::Client, port: u16) -> Result<f64> {
    let (sum0, count0) = passes(port)?;
    for k in 0..20 {
        let _: Vec<i64> = c.call(api::Submit {
            entries: super::estimate::waiting_task(k)?,
            verify: false,
        })?;
        std::thread::sleep(Duration::from_millis(200));
    }
    let (sum1, count1) = passes(port)?;
    if count1 <= count0 {
        anyhow::bail!(
            "no pass ran while 20 tasks were submitted to {}",
            d.socket.display()
        );
    }
    Ok((sum1 - sum0) / (count1 - count0) * 1e3)
}

pub fn rss_with(tasks: usize) -> Result<()> {
    let port = free_port()?;
    let d = Daemon::start(&format!(
        "slots = 16\n[gpu]\nbackend = \"sim:8xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n[http]\nmetrics = true\nmetrics_listen = \"127.0.0.1:{port}\"\n",
    ))?;
    let pid = d.child.id();
    let mut c = d.client()?;
    super::estimate::hold_every_gpu(&d, &mut c)?;
    std::thread::sleep(Duration::from_secs(2));
    println!("rss: the daemon's resident memory, {tasks} tasks waiting (goal < 30 MB, 28.6 MiB)");
    let empty = rss(pid)?;
    row("8 runs, nothing waiting (baseline)", empty);
    // In requests under the daemon's 1 MiB cap.
    let mut left = tasks;
    let (mut k, mut last) = (0, 0);
    while left > 0 {
        let n = left.min(1_000);
        let mut batch = Vec::new();
        for _ in 0..n {
            batch.extend(super::estimate::waiting_task(k)?);
            k += 1;
        }
        let ids: Vec<i64> = c.call(api::Submit {
            entries: batch,
            verify: false,
        })?;
        last = ids.last().copied().unwrap_or(last);
        left -= n;
    }
    std::thread::sleep(Duration::from_secs(3));
    let queued = rss(pid)?;
    row(&format!("{tasks} waiting, after a few passes"), queued);
    let pass = mean_pass(&d, &mut c, port)?;
    println!("  a pass over the {tasks} waiting tasks (the mean of 20): {pass:.1} ms");
    nightjar_text(&d, &["ls", "--limit", "0"])?;
    // The last task waits behind every other: its forecast plays them all.
    nightjar_text(&d, &["estimate", &last.to_string()])?;
    std::thread::sleep(Duration::from_secs(1));
    let read = rss(pid)?;
    row("the same, after `ls` and `estimate LAST`", read);
    println!(
        "  grew by {:.1} MiB for the queue, {:.1} MiB more once read and forecast",
        (queued.0 as f64 - empty.0 as f64) / 1024.0,
        (read.0 as f64 - queued.0 as f64) / 1024.0
    );
    Ok(())
}
