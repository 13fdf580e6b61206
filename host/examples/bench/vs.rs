//! What a person types, side by side with the tools they would use instead,
//! in one run: `nightjar --version` against `/bin/true`, one `nightjar
//! submit` against one `tsp` (task-spooler), and 1,000 `nightjar submit --
//! true` calls with their runs on 2 slots against `xargs -P 2` and `tsp -S 2`.
//! task-spooler is `apt-get install task-spooler` (its binary is `tsp`);
//! without it the task-spooler columns are skipped and say so.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{Daemon, median, nightjar_bin};

/// A private task-spooler server: its socket and output files in a temp dir.
struct Tsp {
    dir: tempfile::TempDir,
}

impl Tsp {
    /// A fresh server with `slots` slots, or `None` when `tsp` is not installed.
    fn start(slots: u32) -> Result<Option<Tsp>> {
        let found = Command::new("tsp")
            .arg("-h")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            return Ok(None);
        }
        let t = Tsp {
            dir: tempfile::tempdir()?,
        };
        t.run(&["-S", &slots.to_string()])?;
        Ok(Some(t))
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tsp");
        c.env("TS_SOCKET", self.dir.path().join("socket"))
            .env("TMPDIR", self.dir.path())
            .env("TS_MAXFINISHED", "100000");
        c
    }

    fn run(&self, args: &[&str]) -> Result<Output> {
        let out = self.cmd().args(args).output()?;
        if !out.status.success() {
            bail!(
                "tsp {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(out)
    }

    /// Queues `true`; the job id.
    fn submit_true(&self) -> Result<u64> {
        let out = self.run(&["true"])?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .context("tsp printed no job id")
    }
}

impl Drop for Tsp {
    fn drop(&mut self) {
        let _ = self.cmd().arg("-K").output();
    }
}

/// `nightjar ARGS` against the daemon `d`; fails on a non-zero exit.
pub fn nightjar(d: &Daemon, args: &[&str]) -> Result<Output> {
    let out = Command::new(nightjar_bin()?)
        .arg("--state-dir")
        .arg(&d.state)
        .args(args)
        .output()?;
    if !out.status.success() {
        bail!(
            "nightjar {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out)
}

/// `nightjar ARGS` against `d`: its standard output, or why it failed.
pub fn nightjar_text(d: &Daemon, args: &[&str]) -> Result<String> {
    nightjar(d, args).map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn id_of(out: &Output) -> Result<String> {
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .map(str::to_string)
        .context("nightjar submit printed no id")
}

/// Median wall time of `k` runs of `f`, in milliseconds.
fn time_ms(k: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut t = Vec::with_capacity(k);
    for _ in 0..k {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(&t))
}

/// Start-up and one submit, each the median of `k` calls.
pub fn startup_and_submit(k: usize) -> Result<()> {
    let bin = nightjar_bin()?;
    let run = |p: &Path, a: &[&str]| -> Result<()> {
        Command::new(p).args(a).stdout(Stdio::null()).status()?;
        Ok(())
    };
    let truth = time_ms(k, || run(Path::new("/bin/true"), &[]))?;
    let version = time_ms(k, || run(&bin, &["--version"]))?;
    println!("start-up: median of {k} calls");
    println!(
        "  /bin/true {truth:.2} ms, `nightjar --version` {version:.2} ms: ratio {:.2}",
        version / truth
    );
    // One submit into a queue held by a long task, so nothing runs meanwhile.
    let d = Daemon::start("slots = 1")?;
    nightjar(&d, &["submit", "--", "sleep", "600"])?;
    let ours = time_ms(k, || nightjar(&d, &["submit", "--", "true"]).map(drop))?;
    // From inside a git repository with a 1 GiB ignored `target/` (a
    // sparse file and 2,000 small ones): the capture runs git as the owner.
    let repo = git_repo_with_target()?;
    let w = repo.path().to_str().context("utf-8 temp path")?.to_string();
    let in_repo = time_ms(k, || {
        nightjar(&d, &["submit", "--workdir", &w, "--", "true"]).map(drop)
    })?;
    println!(
        "  one submit from a git repository with a 1 GiB ignored target/: {in_repo:.2} ms, outside any: {ours:.2} ms: ratio {:.2} (goal <= 2)",
        in_repo / ours
    );
    print!("  one `nightjar submit -- true`: {ours:.2} ms");
    match Tsp::start(1)? {
        Some(t) => {
            t.run(&["sleep", "600"])?;
            let theirs = time_ms(k, || t.submit_true().map(drop))?;
            println!(
                "; one `tsp true`: {theirs:.2} ms: ratio {:.2} (goal <= 1.5)",
                ours / theirs
            );
        }
        None => println!("; task-spooler not installed (`apt-get install task-spooler`): no ratio"),
    }
    Ok(())
}

/// A committed repository with `target/` ignored, holding a 1 GiB sparse
/// file and 2,000 small files.
fn git_repo_with_target() -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    let git = |args: &[&str]| -> Result<()> {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["-c", "user.name=b", "-c", "user.email=b@example.org"])
            .args(args)
            .stdout(Stdio::null())
            .status()?
            .success();
        if !ok {
            bail!("git {args:?} failed");
        }
        Ok(())
    };
    git(&["init", "-q"])?;
    std::fs::write(dir.path().join(".gitignore"), "target/\n")?;
    std::fs::write(dir.path().join("train.py"), "print('hi')\n")?;
    let target = dir.path().join("target");
    std::fs::create_dir(&target)?;
    std::fs::File::create(target.join("big"))?.set_len(1 << 30)?;
    for i in 0..2000 {
        std::fs::write(target.join(format!("f{i}")), "x")?;
    }
    git(&["add", ".gitignore", "train.py"])?;
    git(&["commit", "-qm", "bench"])?;
    Ok(dir)
}

/// One throughput round: seconds for xargs, nightjar, and tsp when installed.
type Round = (f64, f64, Option<f64>);

/// 1,000 submits of `true` from a shell-like loop, and their runs, on 2 slots.
pub fn throughput(n: usize) -> Result<()> {
    let mut rounds: Vec<Round> = Vec::new();
    for _ in 0..3 {
        let xargs = {
            let t = Instant::now();
            let status = Command::new("sh")
                .arg("-c")
                .arg(format!("seq {n} | xargs -P 2 -I{{}} true"))
                .status()?;
            if !status.success() {
                bail!("xargs baseline failed");
            }
            t.elapsed().as_secs_f64()
        };
        let tsp = match Tsp::start(2)? {
            Some(tsp) => {
                let t = Instant::now();
                let mut last = Vec::new();
                for _ in 0..n {
                    last.push(tsp.submit_true()?);
                }
                for id in last.iter().rev().take(2) {
                    tsp.run(&["-w", &id.to_string()])?;
                }
                Some(t.elapsed().as_secs_f64())
            }
            None => None,
        };
        let ours = {
            let d = Daemon::start("slots = 2\n[sandbox]\nlog_cap = \"1MiB\"\n")?;
            let t = Instant::now();
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                ids.push(id_of(&nightjar(&d, &["submit", "--", "true"])?)?);
            }
            let mut args = vec!["wait"];
            args.extend(ids.iter().map(String::as_str));
            nightjar(&d, &args)?;
            t.elapsed().as_secs_f64()
        };
        rounds.push((xargs, ours, tsp));
    }
    let pick = |f: fn(&Round) -> Option<f64>| {
        let v: Vec<f64> = rounds.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| median(&v))
    };
    let xargs = pick(|r| Some(r.0)).unwrap_or(f64::NAN);
    let ours = pick(|r| Some(r.1)).unwrap_or(f64::NAN);
    println!(
        "throughput: {n} x `nightjar submit -- true` from a loop, then `nightjar wait`, 2 slots (median of 3 rounds)"
    );
    println!("  xargs -P 2:  {xargs:.2} s");
    match pick(|r| r.2) {
        Some(tsp) => println!("  tsp -S 2:    {tsp:.2} s ({:.2}x xargs)", tsp / xargs),
        None => println!("  tsp -S 2:    not installed (`apt-get install task-spooler`)"),
    }
    println!(
        "  nightjar:    {ours:.2} s ({:.2}x xargs, goal <= 2.0{})",
        ours / xargs,
        pick(|r| r.2)
            .map(|t| format!("; {:.2}x tsp, goal < 1", ours / t))
            .unwrap_or_default()
    );
    Ok(())
}
