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
    // Read as bytes, taken as UTF-8 lossily: any user's job comment is in
    // `squeue`'s output as they wrote it, and one byte that is no UTF-8
    // would make the whole listing read as empty (every job gone).
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(p) = out_pipe.as_mut() {
            let _ = p.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.take(64 << 10).read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
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

#[cfg(test)]
mod tests {
    use super::run;

    #[test]
    fn output_that_is_not_utf8_is_kept_lossily_not_dropped_whole() {
        // `squeue` prints a user's job comment byte for byte.
        let out = run(
            "sh",
            &["-c", r"printf '1|RUNNING|x\377\376y\n2|PENDING|z\n'"],
        )
        .unwrap();
        assert_eq!(out, "1|RUNNING|x\u{FFFD}\u{FFFD}y\n2|PENDING|z\n");
        let e = run("sh", &["-c", r"printf 'bad \377' >&2; exit 3"]).unwrap_err();
        assert!(format!("{e:#}").contains("bad \u{FFFD}"), "{e:#}");
    }
}
