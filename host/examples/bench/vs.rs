//! What a person types, side by side with the tools they would use instead,
//! in one run: `nightjar --version` against `/bin/true`, one `nightjar
//! submit` against one `tsp` (task-spooler), and 1,000 `nightjar submit --
//! true` calls with their runs on 2 slots against `xargs -P 2` and `tsp -S 2`
//! (and the same 1,000 as one sweep file). Every `nightjar` call runs in the
//! daemon's temporary folder, outside any git repository, as `xargs` and
//! `tsp` do: a submit from inside one (which records the repository's
//! state) is measured on its own, in `startup`.
//! task-spooler is `apt-get install task-spooler` (its binary is `tsp`);
//! without it the task-spooler columns are skipped and say so.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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
        .current_dir(d.state.parent().unwrap_or(&d.state))
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

/// What `startup` measured, in milliseconds (`tsp` when installed).
pub struct Startup {
    /// One `nightjar submit -- true` outside any repository.
    pub submit: f64,
    /// The same from a git repository with a large ignored folder, its
    /// state kept from the submit before (nothing changed since).
    pub in_repo: f64,
    /// The same with a tracked file written just before each submit (git
    /// asked every time).
    pub in_repo_edited: f64,
    /// One `tsp true`.
    pub tsp: Option<f64>,
}

/// Start-up and one submit, each the median of `k` calls.
pub fn startup_and_submit(k: usize) -> Result<Startup> {
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
    let script = repo.path().join("train.py");
    // A tracked file written before each submit: git is asked each time
    // (the write, about 30 us, is inside the timing).
    let mut n = 0u64;
    let in_repo_edited = time_ms(k, || {
        n += 1;
        std::fs::write(&script, format!("print({n})\n"))?;
        nightjar(&d, &["submit", "--workdir", &w, "--", "true"]).map(drop)
    })?;
    // Nothing written since the edit above for longer than the daemon's
    // margin (files changed within it may change again unseen, so their
    // state is not kept: src/manifest/git_cache.rs): from here the state
    // captured at one submit is reused at the next.
    std::thread::sleep(nightjar::manifest::git_cache::RACY + Duration::from_millis(500));
    let in_repo = time_ms(k, || {
        nightjar(&d, &["submit", "--workdir", &w, "--", "true"]).map(drop)
    })?;
    println!(
        "  one submit from a git repository with a 1 GiB ignored target/: {in_repo:.2} ms (its git state kept), {in_repo_edited:.2} ms right after an edit (git status, and diff: the repository is dirty); outside any: {ours:.2} ms: ratio {:.2} (goal <= 2)",
        in_repo / ours
    );
    print!("  one `nightjar submit -- true`: {ours:.2} ms");
    let tsp = match Tsp::start(1)? {
        Some(t) => {
            t.run(&["sleep", "600"])?;
            let theirs = time_ms(k, || t.submit_true().map(drop))?;
            println!(
                "; one `tsp true`: {theirs:.2} ms: ratio {:.2}; from the repository {:.2} (goal <= 1.5), {:.2} right after an edit",
                ours / theirs,
                in_repo / theirs,
                in_repo_edited / theirs
            );
            Some(theirs)
        }
        None => {
            println!("; task-spooler not installed (`apt-get install task-spooler`): no ratio");
            None
        }
    };
    Ok(Startup {
        submit: ours,
        in_repo,
        in_repo_edited,
        tsp,
    })
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

/// One throughput round, in seconds: xargs, nightjar's submits, its sweep,
/// and tsp when installed.
struct Round {
    xargs: f64,
    ours: f64,
    sweep: f64,
    tsp: Option<f64>,
}

/// What `throughput` measured (medians of the rounds, seconds).
pub struct Throughput {
    /// `seq N | xargs -P 2 true`.
    pub xargs: f64,
    /// N `nightjar submit -- true` from a loop, then `nightjar wait`.
    pub ours: f64,
    /// The same N as one sweep file, submitted and waited for.
    pub sweep: f64,
    /// N `tsp true` and the last two waited for (`tsp -S 2`).
    pub tsp: Option<f64>,
    /// The daemon's CPU per run (ms) in the submit loop.
    pub cpu_per_run_ms: f64,
}

/// N members of `true` as one sweep file in `d`'s folder.
fn sweep_file(d: &Daemon, n: usize) -> Result<std::path::PathBuf> {
    let file = d.state.parent().unwrap_or(&d.state).join("sweep.toml");
    let vals = (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    std::fs::write(
        &file,
        format!("name = \"s\"\ncommand = \"true ${{i}}\"\n[sweep]\ni = [{vals}]\n"),
    )?;
    Ok(file)
}

/// 1,000 submits of `true` from a shell-like loop, and their runs, on 2
/// slots; then the same 1,000 as one sweep file.
pub fn throughput(n: usize) -> Result<Throughput> {
    let mut rounds: Vec<Round> = Vec::new();
    let mut cpu = Vec::new();
    let config = "slots = 2\n[sandbox]\nlog_cap = \"1MiB\"\n";
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
            let d = Daemon::start(config)?;
            let cpu0 = super::cpu_secs(d.child.id())?;
            let t = Instant::now();
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                ids.push(id_of(&nightjar(&d, &["submit", "--", "true"])?)?);
            }
            let mut args = vec!["wait"];
            args.extend(ids.iter().map(String::as_str));
            nightjar(&d, &args)?;
            let wall = t.elapsed().as_secs_f64();
            cpu.push((super::cpu_secs(d.child.id())? - cpu0) * 1e3 / n as f64);
            wall
        };
        let sweep = {
            let d = Daemon::start(config)?;
            let file = sweep_file(&d, n)?;
            let t = Instant::now();
            let out = nightjar(&d, &["submit", "-f", file.to_str().unwrap_or("")])?;
            nightjar(&d, &["wait", &id_of(&out)?])?;
            t.elapsed().as_secs_f64()
        };
        rounds.push(Round {
            xargs,
            ours,
            sweep,
            tsp,
        });
    }
    let pick = |f: fn(&Round) -> Option<f64>| {
        let v: Vec<f64> = rounds.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| median(&v))
    };
    let got = Throughput {
        xargs: pick(|r| Some(r.xargs)).unwrap_or(f64::NAN),
        ours: pick(|r| Some(r.ours)).unwrap_or(f64::NAN),
        sweep: pick(|r| Some(r.sweep)).unwrap_or(f64::NAN),
        tsp: pick(|r| r.tsp),
        cpu_per_run_ms: median(&cpu),
    };
    println!(
        "throughput: {n} x `nightjar submit -- true` from a loop, then `nightjar wait`, 2 slots, outside any git repository (median of 3 rounds)"
    );
    println!("  xargs -P 2:  {:.2} s", got.xargs);
    match got.tsp {
        Some(tsp) => println!("  tsp -S 2:    {tsp:.2} s ({:.2}x xargs)", tsp / got.xargs),
        None => println!("  tsp -S 2:    not installed (`apt-get install task-spooler`)"),
    }
    println!(
        "  nightjar:    {:.2} s ({:.2}x xargs, goal <= 2.0{}); the daemon's CPU {:.2} ms a run",
        got.ours,
        got.ours / got.xargs,
        got.tsp
            .map(|t| format!("; {:.2}x tsp, goal < 1", got.ours / t))
            .unwrap_or_default(),
        got.cpu_per_run_ms
    );
    println!(
        "  the same {n} as one sweep file: {:.2} s ({:.2}x xargs, goal <= 1.5)",
        got.sweep,
        got.sweep / got.xargs
    );
    Ok(got)
}
