//! `submit [N]`: one submit's latency at the start of a queue and after
//! N submits, through the CLI (what a user runs) and the API alone.

use std::process::Command;
use std::time::Instant;

use anyhow::{Result, bail};
use nightjar_core::api;
use nightjar_core::client::Client;

use super::{Daemon, entries, median, nightjar_bin};

/// `submit [N]`: three rounds of [`round`], the median one reported.
pub(super) fn latency(n: usize) -> Result<()> {
    // Three rounds on fresh daemons; the median round is reported, since one
    // round's windows of ~100 us round trips are at the mercy of a busy machine.
    let mut rounds = Vec::new();
    for _ in 0..3 {
        rounds.push(round(n)?);
    }
    rounds.sort_by(|a, b| a.cli_ratio().total_cmp(&b.cli_ratio()));
    let r = &rounds[1];
    println!("submit: {n} submits into a growing queue (median round of 3)");
    println!(
        "  `nightjar submit` (what a user runs): {:.2} ms at task 1, {:.2} ms at task {n}: ratio {:.2} (goal <= 1.1; rounds {})",
        r.cli.0 / 1e3,
        r.cli.1 / 1e3,
        r.cli_ratio(),
        rounds
            .iter()
            .map(|r| format!("{:.2}", r.cli_ratio()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  the API round trip alone: {:.0} us at the start, {:.0} us at the end: ratio {:.2}",
        r.api.0,
        r.api.1,
        r.api.1 / r.api.0
    );
    Ok(())
}

/// Medians (start, end) in microseconds of one round.
struct SubmitRound {
    cli: (f64, f64),
    api: (f64, f64),
}

impl SubmitRound {
    fn cli_ratio(&self) -> f64 {
        self.cli.1 / self.cli.0
    }
}

/// One daemon, `n` submits: 50 through the CLI and 500 through the API at
/// each end, the rest through the API to grow the queue.
fn round(n: usize) -> Result<SubmitRound> {
    const CLI: usize = 50;
    const API: usize = 500;
    // One slot, held by a long task: the queue only grows.
    let d = Daemon::start("slots = 1")?;
    let mut c = d.client()?;
    let blocker = entries("command = \"sleep 600\"\n")?;
    let _: Vec<i64> = c.call(api::Submit {
        entries: blocker,
        verify: false,
    })?;
    let one = entries("command = [\"true\"]\n")?;
    let api = |c: &mut Client, k: usize| -> Result<Vec<f64>> {
        let mut t = Vec::with_capacity(k);
        for _ in 0..k {
            let s = Instant::now();
            let _: Vec<i64> = c.call(api::Submit {
                entries: one.clone(),
                verify: false,
            })?;
            t.push(s.elapsed().as_secs_f64() * 1e6);
        }
        Ok(t)
    };
    let cli = |k: usize| -> Result<Vec<f64>> {
        let mut t = Vec::with_capacity(k);
        for _ in 0..k {
            let s = Instant::now();
            let out = Command::new(nightjar_bin()?)
                .args([
                    "--state-dir",
                    d.state.to_str().unwrap_or_default(),
                    "submit",
                    "--",
                    "true",
                ])
                .output()?;
            t.push(s.elapsed().as_secs_f64() * 1e6);
            if !out.status.success() {
                bail!(
                    "nightjar submit failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        Ok(t)
    };
    let cli_start = median(&cli(CLI)?);
    let api_start = median(&api(&mut c, API)?);
    api(&mut c, n.saturating_sub(2 * (CLI + API)))?;
    let api_end = median(&api(&mut c, API)?);
    let cli_end = median(&cli(CLI)?);
    Ok(SubmitRound {
        cli: (cli_start, cli_end),
        api: (api_start, api_end),
    })
}
