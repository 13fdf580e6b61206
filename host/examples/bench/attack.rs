//! `attack`: what a user feels while a hostile policy attacks the daemon.
//! For each attack mode of the hostile test plugin, a release daemon runs it
//! over a queue of 20 tasks for a window while `nightjar ls` (the command a
//! person types) is timed every 50 ms and the daemon's CPU is measured; the
//! baseline is the same daemon and queue with the built-in priority policy.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{Daemon, cpu_secs, nightjar_bin};

const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");

/// The attacks, by the hostile plugin's mode.
const MODES: &[&str] = &[
    "sleep",
    "sleep-forever",
    "loop",
    "spam",
    "until-now",
    "until-min",
    "flaky",
    "preempt-all",
    "preempt-huge",
    "random",
    "random-huge",
    "alias",
    "churn",
    "log-forge",
];

struct Figures {
    p50_ms: f64,
    p99_ms: f64,
    cpu_pct: f64,
}

fn measure(chain: &str, mode: &str, secs: u64) -> Result<Figures> {
    let config = format!(
        "slots = 2\n[plugins]\nchain = [\"{chain}\"]\npreempt_min_runtime = \"2s\"\n[plugin.{chain}.config]\n{}",
        if chain == "hostile" {
            format!("mode = \"{mode}\"\n")
        } else {
            String::new()
        }
    );
    let d = Daemon::start_with(&config, |state| {
        let dir = state.join("plugins");
        std::fs::create_dir_all(&dir)?;
        std::fs::copy(HOSTILE, dir.join("hostile.wasm"))?;
        Ok(())
    })?;
    let bin = nightjar_bin()?;
    let cfg = d.config.to_str().unwrap_or_default().to_string();
    for _ in 0..20 {
        Command::new(&bin)
            .args([
                "--config",
                &cfg,
                "submit",
                "--preemptible",
                "--",
                "sleep",
                "60",
            ])
            .output()?;
    }
    std::thread::sleep(Duration::from_secs(1));
    let pid = d.child.id();
    let (cpu0, t0) = (cpu_secs(pid)?, Instant::now());
    let mut times = Vec::new();
    while t0.elapsed() < Duration::from_secs(secs) {
        let t = Instant::now();
        let out = Command::new(&bin).args(["--config", &cfg, "ls"]).output()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(out.status.success(), "ls failed under `{mode}`");
        std::thread::sleep(Duration::from_millis(50));
    }
    let cpu_pct = (cpu_secs(pid)? - cpu0) / t0.elapsed().as_secs_f64() * 100.0;
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Ok(Figures {
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        cpu_pct,
    })
}

/// Runs every attack for `secs` seconds each, after the baseline.
pub fn attack(secs: u64) -> Result<()> {
    println!(
        "attack: `nightjar ls` every 50 ms and daemon CPU while a hostile policy attacks ({secs} s each, 20 queued tasks)"
    );
    let base = measure("priority", "", secs)?;
    println!(
        "  {:<14} ls p50 {:>6.1} ms  p99 {:>6.1} ms  daemon cpu {:>5.1}%",
        "baseline", base.p50_ms, base.p99_ms, base.cpu_pct
    );
    for mode in MODES {
        let f = measure("hostile", mode, secs)?;
        println!(
            "  {:<14} ls p50 {:>6.1} ms  p99 {:>6.1} ms (x{:.2} of baseline; goal < 50 ms)  daemon cpu {:>5.1}% (goal < 10%)",
            mode,
            f.p50_ms,
            f.p99_ms,
            f.p99_ms / base.p99_ms.max(0.001),
            f.cpu_pct
        );
    }
    Ok(())
}
