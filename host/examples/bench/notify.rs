//! `notify [N]`: notifications as a lab runs them. N `nightjar submit --
//! true` calls and their runs on 2 slots, each success told to a webhook
//! receiver on 127.0.0.1 (a small HTTP server in this process that notes
//! when each event arrives): delivery throughput and the p50/p99 from an
//! event's `at` (written in the run's end transaction) to its arrival; and
//! the same N tasks with no notifier, so the ratio is what the outbox and the
//! delivery thread add to the runs' end-to-end time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::Daemon;

/// Each event's (`at`, arrival), Unix ms.
type Arrivals = Arc<Mutex<Vec<(i64, i64)>>>;

/// A receiver on a port of its own.
fn receiver() -> Result<(u16, Arrivals)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&got);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut r = BufReader::new(stream);
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; len.min(1 << 20)];
            if r.read_exact(&mut body).is_err() {
                continue;
            }
            let now = nightjar::time::now_ms();
            let at = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["at"].as_i64())
                .unwrap_or(now);
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((at, now));
            let _ = r
                .get_mut()
                .write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
        }
    });
    Ok((port, got))
}

/// Seconds to submit `n` tasks running `command` and see them all end.
fn round(d: &Daemon, n: usize, command: &[&str]) -> Result<f64> {
    let t = Instant::now();
    let mut ids = Vec::with_capacity(n);
    let mut args = vec!["submit", "--"];
    args.extend_from_slice(command);
    for _ in 0..n {
        ids.push(super::vs::id_of(&super::vs::nightjar(d, &args)?)?);
    }
    let mut args = vec!["wait"];
    args.extend(ids.iter().map(String::as_str));
    super::vs::nightjar(d, &args)?;
    Ok(t.elapsed().as_secs_f64())
}

fn pct(sorted: &[i64], p: f64) -> i64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Half-second runs: the shortest a lab queues for the night (a smoke
/// test), where the delivery thread does not compete with a saturated CPU.
const SHORT_RUN: &[&str] = &["sleep", "0.5"];

fn with_hook(port: u16) -> Result<Daemon> {
    Daemon::start(&format!(
        "slots = 2\n[notifier.hook]\nplugin = \"webhook\"\nurl = \"http://127.0.0.1:{port}/hook\"\n\
         allow = [\"127.0.0.1:{port}\"]\nevents = [\"task-succeeded\"]\n"
    ))
}

pub fn notify(n: usize) -> Result<()> {
    println!("== notify: {n} tasks, each success told to a local webhook ==");
    let plain = round(&Daemon::start("slots = 2")?, n, &["true"])?;
    let (port, got) = receiver()?;
    let told = round(&with_hook(port)?, n, &["true"])?;
    let t0 = Instant::now();
    while got.lock().unwrap_or_else(|p| p.into_inner()).len() < n {
        if t0.elapsed() > Duration::from_secs(600) {
            bail!("not every event arrived within 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let drain = t0.elapsed().as_secs_f64();
    let got = got.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut lag: Vec<i64> = got.iter().map(|(at, arrived)| arrived - at).collect();
    lag.sort_unstable();
    let first = got.iter().map(|g| g.1).min().unwrap_or(0);
    let last = got.iter().map(|g| g.1).max().unwrap_or(0);
    println!(
        "  runs end to end: {plain:.2} s with no notifier, {told:.2} s with one: {:+.1} % (goal under 5 %)",
        (told / plain - 1.0) * 100.0
    );
    println!(
        "  delivered {} events in {:.2} s ({:.0}/s; the last {:.2} s after the runs ended); event to arrival p50 {} ms, p99 {} ms",
        got.len(),
        (last - first) as f64 / 1000.0,
        got.len() as f64 / ((last - first).max(1) as f64 / 1000.0),
        drain,
        pct(&lag, 0.5),
        pct(&lag, 0.99)
    );
    // The same comparison on runs that do something: what a run's own
    // end-to-end time pays when the CPUs are not saturated by the host.
    let m = (n / 10).clamp(20, 100);
    let plain = round(&Daemon::start("slots = 2")?, m, SHORT_RUN)?;
    let (port, _) = receiver()?;
    let told = round(&with_hook(port)?, m, SHORT_RUN)?;
    println!(
        "  {m} runs of `sleep 0.5`: {plain:.2} s with no notifier, {told:.2} s with one: {:+.1} % (goal under 5 %)",
        (told / plain - 1.0) * 100.0
    );
    Ok(())
}
