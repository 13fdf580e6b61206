//! The host-hardening benchmarks:
//!
//! - `clients`: `nightjar ls` (the command a person types) while 100
//!   `nightjar wait` clients are connected and one client sends garbage,
//!   against the same daemon with neither;
//! - `soak [MINUTES]`: 10,000 tasks deferred by the four-policy chain: how
//!   much the database grows while nothing changes (per hour, from a window
//!   of MINUTES), then the database size after two rounds of 10,000 tasks
//!   each cancelled and collected by `nightjar gc`.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{Daemon, nightjar_bin};

/// p50 and p99 of `nightjar ls` over `secs`, asked every 50 ms.
fn ls_latency(d: &Daemon, secs: u64) -> Result<(f64, f64)> {
    let bin = nightjar_bin()?;
    let cfg = d.config.to_str().unwrap_or_default().to_string();
    let mut times = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(secs) {
        let t = Instant::now();
        let out = Command::new(&bin).args(["--config", &cfg, "ls"]).output()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(out.status.success(), "ls failed");
        std::thread::sleep(Duration::from_millis(50));
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.5), at(0.99)))
}

/// One client that keeps sending garbage: bad JSON, half lines, a 2 MiB
/// line, binary noise, each on a fresh connection.
fn garbage(socket: std::path::PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let payloads: [Vec<u8>; 4] = [
            b"{not json\n".to_vec(),
            b"{\"verb\": \"submit\", \"entries\": [".to_vec(),
            vec![b'x'; 2 << 20],
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
                .collect(),
        ];
        let mut sent = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for p in &payloads {
                if let Ok(mut s) = UnixStream::connect(&socket) {
                    let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
                    let _ = s.write_all(p);
                    sent += 1;
                }
            }
        }
        sent
    })
}

/// `clients`: ls under 100 waiting clients and a garbage sender.
pub fn clients(secs: u64) -> Result<()> {
    println!("clients: `nightjar ls` every 50 ms for {secs} s");
    let base = Daemon::start("slots = 1")?;
    let (b50, b99) = ls_latency(&base, secs)?;
    drop(base);
    let d = Daemon::start("slots = 1")?;
    let bin = nightjar_bin()?;
    let cfg = d.config.to_str().unwrap_or_default().to_string();
    let out = Command::new(&bin)
        .args(["--config", &cfg, "--json", "submit", "--", "sleep", "600"])
        .output()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let id = v[0]["id"].as_i64().unwrap_or(1).to_string();
    let mut waiters: Vec<Child> = (0..100)
        .map(|_| {
            Command::new(&bin)
                .args(["--config", &cfg, "wait", &id])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
        })
        .collect::<std::io::Result<_>>()?;
    std::thread::sleep(Duration::from_secs(1));
    let stop = Arc::new(AtomicBool::new(false));
    let g = garbage(d.socket.clone(), Arc::clone(&stop));
    let (a50, a99) = ls_latency(&d, secs)?;
    stop.store(true, Ordering::Relaxed);
    let sent = g.join().unwrap_or(0);
    let mut alive = 0;
    for w in &mut waiters {
        if matches!(w.try_wait(), Ok(None)) {
            alive += 1;
        }
    }
    for w in &mut waiters {
        let _ = w.kill();
        let _ = w.wait();
    }
    println!("  baseline (no other clients):  p50 {b50:.1} ms  p99 {b99:.1} ms");
    println!(
        "  100 waits + garbage ({sent} bad requests): p50 {a50:.1} ms  p99 {a99:.1} ms (x{:.2}; goal p99 < 50 ms); {alive}/100 waits still connected",
        a99 / b99.max(0.001)
    );
    Ok(())
}

/// A config whose four-policy chain defers everything: the only cheap
/// window is a minute twelve hours from now.
fn deferring_config() -> String {
    let now = chrono::Utc::now() + chrono::Duration::hours(12);
    let end = now + chrono::Duration::minutes(1);
    format!(
        "slots = 2\ntimezone = \"UTC\"\n[retention]\nended = \"1s\"\nfailed = \"1s\"\nevery = \"0s\"\n[plugins]\nchain = [\"priority\", \"offpeak-tariff\", \"fair-share\", \"thermal\"]\n[plugin.offpeak-tariff.config]\n[[plugin.offpeak-tariff.config.windows]]\nstart = \"{}\"\nend = \"{}\"\nprice = 0.3\n",
        now.format("%H:%M"),
        end.format("%H:%M")
    )
}

fn db_bytes(d: &Daemon) -> u64 {
    ["nightjar.db", "nightjar.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(d.state.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// Submits `n` deferred tasks as sweeps of 2,000; returns the sweep ids.
fn submit_many(d: &Daemon, n: usize) -> Result<Vec<String>> {
    let bin = nightjar_bin()?;
    let cfg = d.config.to_str().unwrap_or_default().to_string();
    let mut ids = Vec::new();
    for chunk in 0..n.div_ceil(2000) {
        let count = (n - chunk * 2000).min(2000);
        let values: Vec<String> = (0..count).map(|i| i.to_string()).collect();
        let file = d.state.with_file_name(format!("sweep{chunk}.toml"));
        std::fs::write(
            &file,
            format!(
                "name = \"soak{chunk}\"\ncommand = \"true ${{i}}\"\n[sweep]\ni = [{}]\n",
                values.join(", ")
            ),
        )?;
        let out = Command::new(&bin)
            .args(["--config", &cfg, "--json", "submit"])
            .arg(&file)
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "submit: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        ids.push(v[0]["id"].as_i64().unwrap_or(0).to_string());
    }
    Ok(ids)
}

/// `soak`: database growth with 10,000 deferred tasks, and its size after gc.
pub fn soak(minutes: u64) -> Result<()> {
    println!("soak: 10,000 tasks deferred by the four-policy chain");
    let d = Daemon::start(&deferring_config())?;
    let bin = nightjar_bin()?;
    let cfg = d.config.to_str().unwrap_or_default().to_string();
    let ids = submit_many(&d, 10_000)?;
    std::thread::sleep(Duration::from_secs(20));
    let (s0, t0) = (db_bytes(&d), Instant::now());
    std::thread::sleep(Duration::from_secs(minutes * 60));
    let s1 = db_bytes(&d);
    let per_hour = (s1.saturating_sub(s0)) as f64 / t0.elapsed().as_secs_f64() * 3600.0;
    let file = |f: &str| std::fs::metadata(d.state.join(f)).map_or(0, |m| m.len());
    println!(
        "  while nothing changes: {s0} -> {s1} bytes (database {} + WAL {}) in {minutes} min = {:.1} KiB an hour (goal < 1 MiB)",
        file("nightjar.db"),
        file("nightjar.db-wal"),
        per_hour / 1024.0
    );
    let mut sizes = Vec::new();
    let mut round_ids = ids;
    for round in 0..2 {
        if round > 0 {
            round_ids = submit_many(&d, 10_000)?;
        }
        for id in &round_ids {
            Command::new(&bin)
                .args(["--config", &cfg, "cancel", id])
                .output()?;
        }
        std::thread::sleep(Duration::from_millis(1500));
        Command::new(&bin).args(["--config", &cfg, "gc"]).output()?;
        sizes.push(db_bytes(&d));
    }
    println!(
        "  after 10,000 tasks cancelled and collected: {} bytes; after a second 10,000: {} bytes (ratio {:.2}; bounded when ~1)",
        sizes[0],
        sizes[1],
        sizes[1] as f64 / sizes[0].max(1) as f64
    );
    Ok(())
}
