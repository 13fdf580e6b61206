//! `slurm [N]`: releasing an N-member (1,000) sweep to a real one-node
//! SLURM cluster (`scripts/slurm-dev`) through the SLURM executor, from
//! `nightjar submit` to every job held by SLURM, against `sbatch
//! --array=1-N` of the same command on the same cluster (A B A B); then
//! the daemon's CPU with the N jobs pending at the default poll, against
//! the same daemon before it had any job. The partition is set DOWN while
//! it runs, so every job stays PENDING and nothing runs (it is set UP
//! again and every job cancelled at the end).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

use super::{Daemon, cpu_secs, nightjar_bin};

/// Runs `cmd args` on the cluster; its stdout.
fn slurm(conf: &str, cmd: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(cmd)
        .args(args)
        .env("SLURM_CONF", conf)
        .output()
        .with_context(|| format!("run {cmd}"))?;
    ensure!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Jobs SLURM holds whose name starts with `prefix`, each element of a
/// job array counted (`-r`).
fn held(conf: &str, prefix: &str) -> Result<usize> {
    Ok(slurm(conf, "squeue", &["-h", "-r", "-o", "%j"])?
        .lines()
        .filter(|l| l.starts_with(prefix))
        .count())
}

/// Waits until `n` jobs named `prefix*` are held; seconds since `t0`.
fn until_held(conf: &str, prefix: &str, n: usize, t0: Instant) -> Result<f64> {
    loop {
        if held(conf, prefix)? >= n {
            return Ok(t0.elapsed().as_secs_f64());
        }
        if t0.elapsed() > Duration::from_secs(600) {
            bail!("{n} jobs `{prefix}*` not held by SLURM within 10 min");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sets the partition back UP and cancels every job, however the bench ends.
struct Restore<'a>(&'a str);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let _ = slurm(
            self.0,
            "scontrol",
            &["update", "PartitionName=debug", "State=UP"],
        );
        let _ = slurm(self.0, "scancel", &["--partition=debug"]);
    }
}

pub fn slurm_release(n: usize) -> Result<()> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/slurm-dev");
    let out = Command::new(&script)
        .output()
        .context("run scripts/slurm-dev")?;
    ensure!(
        out.status.success(),
        "scripts/slurm-dev (as root): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conf = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("export SLURM_CONF=").map(str::to_string))
        .context("scripts/slurm-dev printed no SLURM_CONF")?;
    let conf = conf.as_str();
    let _restore = Restore(conf);
    slurm(conf, "scancel", &["--partition=debug"])?;
    slurm(
        conf,
        "scontrol",
        &["update", "PartitionName=debug", "State=DOWN"],
    )?;
    println!(
        "slurm: a {n}-member sweep released to SLURM (partition held DOWN: every job stays PENDING)"
    );
    let mut ours = Vec::new();
    let mut array = Vec::new();
    let mut poll_cpu = None;
    for round in 0..2 {
        // A: nightjar, from the submit to every member held by SLURM.
        let shared = tempfile::tempdir()?;
        let d = Daemon::start_env(
            &format!(
                "slots = {n}\n[executor]\nkind = \"slurm\"\nshared_dir = \"{}\"\nmax_pending = {n}\n",
                shared.path().display()
            ),
            &[("SLURM_CONF", conf)],
        )?;
        let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let file = d.state.with_file_name("sweep.toml");
        std::fs::write(
            &file,
            format!(
                "name = \"rel\"\ncommand = \"sleep 600 ${{i}}\"\n[sweep]\ni = [{}]\n",
                values.join(", ")
            ),
        )?;
        let t0 = Instant::now();
        let status = Command::new(nightjar_bin()?)
            .args(["--config", d.config.to_str().unwrap_or_default(), "submit"])
            .arg(&file)
            .stdout(std::process::Stdio::null())
            .status()?;
        ensure!(status.success(), "nightjar submit of the sweep failed");
        ours.push(until_held(conf, "nightjar-", n, t0)?);
        if round == 1 {
            // The poller's cost with N jobs pending, at the default poll (5 s).
            let pid = d.child.id();
            let (c0, t) = (cpu_secs(pid)?, Instant::now());
            std::thread::sleep(Duration::from_secs(60));
            poll_cpu = Some((cpu_secs(pid)? - c0) / t.elapsed().as_secs_f64());
        }
        drop(d);
        slurm(conf, "scancel", &["--partition=debug"])?;
        while held(conf, "nightjar-")? > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        // B: one sbatch of a job array of the same command.
        let t0 = Instant::now();
        slurm(
            conf,
            "sbatch",
            &[
                "--parsable",
                "--job-name=array-rel",
                &format!("--array=1-{n}"),
                "--output=/dev/null",
                "--wrap",
                "sleep 600",
            ],
        )?;
        array.push(until_held(conf, "array-rel", n, t0)?);
        slurm(conf, "scancel", &["--partition=debug"])?;
        while held(conf, "array-rel")? > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let med = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (a, b) = (med(&ours), med(&array));
    println!(
        "  nightjar (a job array per round of starts): {a:.3} s (rounds {:?})",
        ours.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>()
    );
    println!(
        "  sbatch --array=1-{n}: {b:.3} s (rounds {:?})",
        array.iter().map(|x| format!("{x:.3}")).collect::<Vec<_>>()
    );
    println!("  ratio nightjar / array: {:.1}x (goal <= 3x)", a / b);
    if let Some(cpu) = poll_cpu {
        println!(
            "  daemon CPU with {n} jobs pending, default poll 5 s: {:.2}% of a core (goal < 1%)",
            cpu * 100.0
        );
    }
    Ok(())
}
