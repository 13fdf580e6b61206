//! `simulate [JOBS]`: `nightjar simulate` as a user runs it (the release
//! client, which hands the trace to `nightjard`) on JOBS (100,000) jobs on
//! 32 GPUs, against the plain Python event simulator of the same rules
//! (`tests/support/sim_reference.py`) on the same trace, A B A B in one
//! run: the built-in order with EASY backfill. Then the same jobs through
//! the four first-party policies (priority, offpeak-tariff, fair-share,
//! thermal), the tariff's `max_wait` at a day as in `examples/lab.toml`
//! (without it, work that arrives at 90% of the machine waits for 8 cheap
//! hours a day, and the queue grows to `plugins.max_queue`): wall time,
//! passes, mean time per pass, peak memory.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

const GPUS: u32 = 32;

/// A trace of `jobs` that keeps 32 GPUs about 90% busy: 1-8 GPUs, 1 min to
/// 4 h, estimates off by up to half, three projects (fixed seed).
fn trace(jobs: u64) -> String {
    let mut csv = String::from("id,arrival_s,gpus,duration_s,project,estimate_s,power_w\n");
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut at = 0;
    for id in 1..=jobs {
        let gpus = [1, 1, 1, 1, 2, 2, 4, 8][next(8) as usize];
        let duration = 60 + next(4 * 3600);
        // Mean work 2.6 GPUs x 2 h: one arrival every ~10 min is ~90% of 32 GPUs.
        at += next(1200);
        let estimate = (duration / 2 + next(duration)).max(1);
        let project = ["vision", "genomics", "nlp"][next(3) as usize];
        csv += &format!("{id},{at},{gpus},{duration},{project},{estimate},300\n");
    }
    csv
}

/// Runs `cmd` to its end: its wall time and stdout.
fn timed(cmd: &mut Command) -> Result<(Duration, String)> {
    let t0 = Instant::now();
    let out = cmd.output().context("run")?;
    let took = t0.elapsed();
    if !out.status.success() {
        bail!("{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
    }
    Ok((took, String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// Runs `cmd` to its end: its wall time, stdout, the peak resident set
/// of it and the children it waited for (MiB), and their CPU time (user
/// and system), from its own `wait4`. (Not
/// `RUSAGE_CHILDREN`: this process is `scripts/bench`'s shell after `exec`,
/// whose children's peak already counts the `cargo build` before it.)
fn timed_peak(cmd: &mut Command) -> Result<(Duration, String, f64, Duration)> {
    use std::io::Read;
    let t0 = Instant::now();
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("run")?;
    // Both pipes drained at once: neither can fill while the other is read.
    let stderr = child.stderr.take();
    let errs = std::thread::spawn(move || {
        let mut err = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut err);
        }
        err
    });
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out)?;
    }
    let err = errs.join().unwrap_or_default();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 writes the status and the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `pid` is our child, not yet waited for.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut u) };
    let took = t0.elapsed();
    if waited != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("{cmd:?} failed: {err}");
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let cpu = tv(u.ru_utime) + tv(u.ru_stime);
    Ok((took, out, u.ru_maxrss as f64 / 1024.0, cpu))
}

pub fn simulate(jobs: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("trace.csv");
    std::fs::write(&path, trace(jobs as u64))?;
    let bin = super::nightjar_bin()?;
    let none = dir.path().join("none.toml");
    std::fs::write(&none, "[plugins]\nchain = []\n")?;
    let four = dir.path().join("four.toml");
    std::fs::write(
        &four,
        "timezone = \"Asia/Shanghai\"\n[plugins]\nchain = [\"priority\", \"offpeak-tariff\", \"fair-share\", \"thermal\"]\n\
         [tariff]\ncurrency = \"CNY\"\nprice = 1.2\n[[tariff.windows]]\nfrom = \"23:00\"\nto = \"07:00\"\nprice = 0.35\n\
         [plugin.offpeak-tariff.config]\nmax_wait = \"1d\"\n",
    )?;
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/support/sim_reference.py");
    let (chain_took, out, peak, cpu) = timed_peak(
        Command::new(&bin)
            .arg("--config")
            .arg(&four)
            .args(["--json", "simulate"])
            .arg(&path)
            .args(["--gpus", &GPUS.to_string()]),
    )?;
    let v: serde_json::Value = serde_json::from_str(&out)?;
    let passes = v["passes"].as_u64().unwrap_or(0);
    let ours = || {
        timed(
            Command::new(&bin)
                .arg("--config")
                .arg(&none)
                .args(["simulate"])
                .arg(&path)
                .args(["--gpus", &GPUS.to_string(), "--order", "backfill"]),
        )
    };
    let theirs = || {
        timed(
            Command::new("python3")
                .arg(&reference)
                .arg(&path)
                .arg(GPUS.to_string())
                .arg("easy"),
        )
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        a.push(ours()?.0);
        b.push(theirs()?.0);
    }
    a.sort();
    b.sort();
    let (a, b) = (a[1], b[1]);
    println!(
        "simulate: {jobs} jobs on {GPUS} GPUs, built-in order with EASY backfill, median of 3 (A B A B):"
    );
    println!("  nightjar simulate        {:>8.2} s", a.as_secs_f64());
    println!(
        "  Python reference         {:>8.2} s   (nightjar: {:.2}x its time)",
        b.as_secs_f64(),
        a.as_secs_f64() / b.as_secs_f64()
    );
    println!(
        "  four-policy wasm chain   {:>8.2} s   {passes} passes, {:.2} ms a pass, peak {:.0} MiB, CPU {:.2} s",
        chain_took.as_secs_f64(),
        chain_took.as_secs_f64() * 1000.0 / passes.max(1) as f64,
        peak,
        cpu.as_secs_f64()
    );
    Ok(())
}
