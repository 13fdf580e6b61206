//! Running one of SLURM's commands: bounded in time, its stdout returned,
//! its stderr in the error (the cluster's own words: what to fix).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

/// How long one command may take: `sbatch` and `squeue` retry for a while
/// when slurmctld is slow, and a pass must not wait on them for ever.
pub const LIMIT: Duration = Duration::from_secs(30);

/// Runs `program args` with the daemon's environment (`SLURM_CONF` among
/// it) and returns its stdout; an error if it fails, says so on exit, or
/// takes longer than [`LIMIT`] (then it is killed).
pub fn run(program: &str, args: &[&str]) -> Result<String> {
    run_with(program, args, &[])
}

/// [`run`] with `env` added to its environment.
pub fn run_with(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!("cannot run `{program}`: {e}; is SLURM's client installed and on PATH?")
        })?;
    // Read both pipes while it runs: a long listing would fill one and stall it.
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(p) = out_pipe.as_mut() {
            let _ = p.read_to_string(&mut s);
        }
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.take(64 << 10).read_to_string(&mut s);
        }
        s
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    match status {
        None => bail!(
            "`{program} {}` took over {}s and was killed",
            args.join(" "),
            LIMIT.as_secs()
        ),
        Some(s) if !s.success() => bail!(
            "`{program} {}` failed ({s}): {}",
            args.join(" "),
            err.trim()
        ),
        Some(_) => Ok(out),
    }
}
