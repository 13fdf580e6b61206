//! `spawn [N]`: what a pre-forked spawner could save per run. The daemon
//! starts each supervisor as `std` does without `pre_exec` hooks
//! (`posix_spawn`: a vfork-style clone, so the daemon's size does not
//! count); a spawner forked once at start would `fork` itself instead and
//! run the supervisor's code without an `exec`. N (2,000) of each, A B A B
//! for three rounds: the shipped supervisor started without arguments
//! until it exits (it prints its usage), against a bare `fork` whose child
//! exits at once. The difference is the most a spawner saves per run.

use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// Microseconds each for `n` starts of `sup` through `std` (`posix_spawn`).
fn spawned(sup: &std::path::Path, n: usize) -> Result<f64> {
    let t = Instant::now();
    for _ in 0..n {
        Command::new(sup)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .with_context(|| format!("start {}", sup.display()))?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e6 / n as f64)
}

/// Microseconds each for `n` forks of this process whose child exits at once.
fn forked(n: usize) -> Result<f64> {
    let t = Instant::now();
    for _ in 0..n {
        // SAFETY: the child calls only `_exit`, which is async-signal-safe.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: ends the child without running any of this process's code.
            unsafe { libc::_exit(0) };
        }
        if pid < 0 {
            bail!("fork: {}", std::io::Error::last_os_error());
        }
        let mut status = 0;
        // SAFETY: `pid` is our child; waitpid writes `status`.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
    Ok(t.elapsed().as_secs_f64() * 1e6 / n as f64)
}

pub fn spawn(n: usize) -> Result<()> {
    let sup = super::nightjar_bin()?.with_file_name("nightjar-supervise");
    if !sup.is_file() {
        bail!("no supervisor at {}: build it first", sup.display());
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        a.push(spawned(&sup, n)?);
        b.push(forked(n)?);
    }
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (a, b) = (a[1], b[1]);
    println!("spawn: {n} supervisor starts vs {n} bare forks, median of 3 rounds (A B A B)");
    println!("  posix_spawn of {} to its exit  {a:7.1} us", sup.display());
    println!("  fork of this process, child exits at once  {b:7.1} us");
    println!(
        "  the most a pre-forked spawner saves per run: {:.1} us",
        (a - b).max(0.0)
    );
    Ok(())
}
