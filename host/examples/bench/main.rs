//! Benchmarks of the core host, as ratios against baselines measured in the
//! same run. Run with `scripts/bench` (release build):
//!
//! - `submit`: latency of submit 1 vs submit 10,000 into a growing queue;
//! - `startup`: `nightjar --version` vs `/bin/true`, one `nightjar submit`
//!   vs one `tsp` (task-spooler);
//! - `throughput`: 1,000 `nightjar submit -- true` calls and their runs on 2
//!   slots vs `xargs -P 2` and `tsp -S 2`, and the same 1,000 as one sweep;
//! - `regress [record]`: the run-path, submit and policy-pass ratios of
//!   `throughput`, `startup` and `plugins` against the ones recorded for
//!   this machine kind in `recorded.toml` (fails on one twice its record;
//!   `record` writes the file instead);
//! - `idle`: CPU and RSS of an idle daemon over 60 s;
//! - `gpu`: one round of readings of 8 GPUs through the stand-in NVML library
//!   (µs per GPU), and the daemon's CPU with 8 GPUs sampled at 1 Hz and 8
//!   GPU tasks running, against the same daemon with no GPU backend;
//! - `attack`: `nightjar ls` latency and daemon CPU while each attack of the
//!   hostile test plugin runs, against the built-in priority policy;
//! - `postrun`: classifying and validating a run with 1,000 output files
//!   (manifest and the `outputs` validator) vs `find | xargs sha256sum`, and
//!   the peak memory of hashing a 2 GiB file;
//! - `manifest [FILES]`: hashing a 1 GiB input vs `sha256sum` on the same
//!   file, and what the manifest capture adds to a run's start in a dirty
//!   repository of FILES (10,000) files with 10 inputs already hashed;
//! - `archive [MIB]`: a run's end to its verified archive (MIB MiB and
//!   1,000 small files) against `sha256sum` + `cp -a` + `sync` + `sha256sum -c`;
//! - `notify [N]`: N tasks told to a local webhook: delivery throughput,
//!   event-to-arrival p50/p99, and what notifying adds to the runs' time;
//! - `report [RUNS]`: `nightjar report --since 30d` through the CLI over
//!   RUNS (100,000) runs of the last 30 days with their GPU series, vs
//!   `nightjar ls` and one SQL read of the same runs;
//! - `backfill [SMALL]`: GPU utilisation of a mixed workload on 8 simulated
//!   GPUs with EASY backfill vs strict order vs passing big tasks over, on
//!   a simulated clock, and that no 4-GPU task starts after its reservation;
//! - `simulate [JOBS]`: `nightjar simulate` of JOBS (100,000) jobs on 32 GPUs
//!   vs the Python reference simulator of the same rules on the same trace,
//!   and through the four-policy wasm chain (passes, time a pass, memory);
//! - `slurm [N]`: an N-member sweep released to a one-node SLURM cluster
//!   through the SLURM executor vs `sbatch --array=1-N`, and the daemon's
//!   CPU with N jobs pending;
//! - `clients`: `nightjar ls` under 100 waiting clients and a garbage sender;
//! - `soak [MINUTES]`: database growth with 10,000 deferred tasks, and its
//!   size after rounds of 10,000 tasks collected by `nightjar gc`.

mod accuracy;
mod archive;
mod attack;
mod backfill;
mod dashboard;
mod estimate;
mod hardening;
mod manifest;
mod metrics;
mod native;
mod notify;
mod plugins;
mod policies;
mod postrun;
mod queue;
mod regress;
mod report;
mod rss;
mod simulate;
mod slurm;
mod spawn;
mod sse;
mod submit;
mod vs;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nightjar::api;
use nightjar::task::file::{Format, parse};
use nightjar::task::resolve::resolve;
use nightjar_core::client::Client;

struct Daemon {
    child: Child,
    socket: PathBuf,
    state: PathBuf,
    config: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    fn start(config: &str) -> Result<Daemon> {
        Self::start_with(config, |_| Ok(()))
    }

    /// Starts a daemon with `env` added to its environment.
    fn start_env(config: &str, env: &[(&str, &str)]) -> Result<Daemon> {
        Self::start_full(config, |_| Ok(()), env)
    }

    /// Starts a daemon after `prepare` has set up its state dir.
    fn start_with(config: &str, prepare: impl FnOnce(&Path) -> Result<()>) -> Result<Daemon> {
        Self::start_full(config, prepare, &[])
    }

    fn start_full(
        config: &str,
        prepare: impl FnOnce(&Path) -> Result<()>,
        env: &[(&str, &str)],
    ) -> Result<Daemon> {
        // BENCH_DIR puts the state dir on another file system (e.g. /dev/shm).
        let dir = match std::env::var_os("BENCH_DIR") {
            Some(base) => tempfile::tempdir_in(base)?,
            None => tempfile::tempdir()?,
        };
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state)?;
        std::fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        prepare(&state)?;
        let cfg = dir.path().join("nightjar.toml");
        std::fs::write(
            &cfg,
            format!("state_dir = \"{}\"\n{config}\n", state.display()),
        )?;
        let child = Command::new(nightjar_bin()?)
            .args(["--config", cfg.to_str().unwrap_or_default(), "daemon"])
            .env("NIGHTJAR_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .spawn()?;
        let socket = state.join("nightjar.sock");
        let t0 = Instant::now();
        while Client::connect(&socket, "").is_err() {
            if t0.elapsed() > Duration::from_secs(20) {
                bail!("daemon did not start");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Daemon {
            child,
            socket,
            state,
            config: cfg,
            _dir: dir,
        })
    }

    fn client(&self) -> Result<Client> {
        Ok(Client::connect(&self.socket, "")?)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The client the benchmarks run: `NIGHTJAR_BENCH_BIN` (scripts/bench sets
/// it to the binaries as the package ships them), else the one beside the
/// bench's target folder.
fn nightjar_bin() -> Result<PathBuf> {
    if let Some(bin) = std::env::var_os("NIGHTJAR_BENCH_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .context("no target dir")?;
    Ok(dir.join("nightjar"))
}

fn entries(toml: &str) -> Result<Vec<nightjar::task::model::NewEntry>> {
    let defs = parse(toml, Format::Toml).map_err(anyhow::Error::msg)?;
    resolve(&defs, &std::env::temp_dir(), "bench").map_err(anyhow::Error::msg)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Eight stand-in GPUs, as the stand-in NVML library reads them.
fn eight_gpus() -> String {
    let mut v = String::from("count=8\n");
    for i in 0..8 {
        v.push_str(&format!(
            "{i}.name=NVIDIA A100-SXM4-80GB\n{i}.uuid=GPU-{i:08}-0000-0000-0000-000000000000\n{i}.mem_total={}\n{i}.mem_used=0\n{i}.util=0\n{i}.temp=40\n{i}.power_mw=60000\n{i}.energy_mj=1000\n",
            80u64 << 30
        ));
    }
    v
}

fn gpu(secs: u64) -> Result<()> {
    let standin = env!("NIGHTJAR_NVML_STANDIN");
    let values = std::env::temp_dir().join(format!("nightjar-bench-gpus-{}", std::process::id()));
    std::fs::write(&values, eight_gpus())?;
    // SAFETY: set before this process starts any thread that reads the environment.
    unsafe { std::env::set_var("NVML_STANDIN_FILE", &values) };
    let mut backend = nightjar::gpu::nvml::NvmlGpus::open(Some(Path::new(standin)))
        .map_err(anyhow::Error::msg)?;
    use nightjar::gpu::GpuBackend;
    let indices: Vec<u32> = backend.inventory().iter().map(|g| g.index).collect();
    let rounds = 2_000;
    for _ in 0..100 {
        indices.iter().for_each(|&i| drop(backend.read(i)));
    }
    let t = Instant::now();
    for _ in 0..rounds {
        for &i in &indices {
            backend.read(i).map_err(anyhow::Error::msg)?;
        }
    }
    let per_gpu = t.elapsed().as_secs_f64() * 1e6 / (rounds * indices.len()) as f64;
    println!(
        "gpu: one round of readings of {} GPUs through the stand-in NVML (nvml-wrapper, real call path)",
        indices.len()
    );
    println!(
        "  {per_gpu:.1} us per GPU, {:.1} us per round of readings = {:.4}% of the 1 s sample period",
        per_gpu * 8.0,
        per_gpu * 8.0 / 1e4
    );

    let cpu_with = |backend: &str, gpus: bool| -> Result<f64> {
        let d = Daemon::start(&format!(
            "slots = 8\n[gpu]\nbackend = \"{backend}\"\nhost_mem_min_free = \"1MiB\"\n"
        ))?;
        let mut c = d.client()?;
        let one = entries(if gpus {
            "command = \"sleep 600\"\n[resources]\ngpus = 1\n"
        } else {
            "command = \"sleep 600\"\n"
        })?;
        let batch: Vec<_> = (0..8).flat_map(|_| one.clone()).collect();
        let _: Vec<i64> = c.call(api::Submit {
            entries: batch,
            verify: false,
        })?;
        std::thread::sleep(Duration::from_secs(2));
        let (cpu0, t0) = (cpu_secs(d.child.id())?, Instant::now());
        std::thread::sleep(Duration::from_secs(secs));
        let (cpu1, wall) = (cpu_secs(d.child.id())?, t0.elapsed().as_secs_f64());
        Ok((cpu1 - cpu0) / wall * 100.0)
    };
    let with = cpu_with(&format!("nvml:{standin}"), true)?;
    let without = cpu_with("none", false)?;
    println!(
        "  daemon CPU over {secs} s with 8 tasks running: 8 GPUs sampled at 1 Hz {with:.3}% of one core (goal < 1%), no GPU backend {without:.3}%"
    );
    let _ = std::fs::remove_file(&values);
    Ok(())
}

fn idle(secs: u64) -> Result<()> {
    let d = Daemon::start("")?;
    let pid = d.child.id();
    std::thread::sleep(Duration::from_secs(1));
    let (cpu0, t0) = (cpu_secs(pid)?, Instant::now());
    std::thread::sleep(Duration::from_secs(secs));
    let (cpu1, wall) = (cpu_secs(pid)?, t0.elapsed().as_secs_f64());
    let pct = (cpu1 - cpu0) / wall * 100.0;
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))?
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_default();
    println!("idle: daemon with an empty queue for {secs} s");
    println!("  cpu: {pct:.3}% of one core (goal < 0.5%)");
    println!("  rss: {rss} kB (goal < 30 MB)");
    Ok(())
}

/// CPU time of every thread of `pid` in seconds, at nanosecond resolution
/// (/proc/PID/task/*/schedstat), so short windows of a quiet daemon still measure.
fn cpu_secs(pid: u32) -> Result<f64> {
    let mut ns = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let stat = std::fs::read_to_string(t?.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
    }
    Ok(ns as f64 / 1e9)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let what = args.first().map(String::as_str).unwrap_or("all");
    let n = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    match what {
        "submit" => submit::latency(n(1, 10_000)),
        "throughput" => vs::throughput(n(1, 1_000)).map(drop),
        "queue" => queue::queue(n(1, 10_000)),
        "lsload" => queue::lsload(n(1, 10_000)),
        "paced" => queue::paced(n(1, 10_000)),
        "startup" => vs::startup_and_submit(n(1, 200)).map(drop),
        "idle" => idle(n(1, 60) as u64),
        "rss" => rss::rss_with(n(1, 10_000)),
        "sse" => sse::sse(n(1, 30) as u64),
        "gpu" => gpu(n(1, 20) as u64),
        "plugins" => plugins::plugins().and_then(|_| policies::each()),
        "regress" => regress::regress(args.get(1).map(String::as_str) == Some("record")),
        "attack" => attack::attack(n(1, 10) as u64),
        "clients" => hardening::clients(n(1, 10) as u64),
        "soak" => hardening::soak(n(1, 5) as u64),
        "postrun" => postrun::postrun(n(1, 1_000)),
        "manifest" => manifest::manifest(n(1, 10_000)),
        "notify" => notify::notify(n(1, 1_000)),
        "archive" => archive::archive(n(1, 512)),
        "report" => report::report(n(1, 100_000)),
        "dashboard" => dashboard::dashboard(n(1, 10_000)),
        "metrics" => metrics::metrics(n(1, 10_000)),
        "backfill" => backfill::backfill(n(1, 400)),
        "simulate" => simulate::simulate(n(1, 100_000)),
        "estimate" => estimate::estimate(n(1, 1_000)),
        "accuracy" => accuracy::accuracy(n(1, 60)),
        "slurm" => slurm::slurm_release(n(1, 1_000)),
        "spawn" => spawn::spawn(n(1, 2_000)),
        "all" => {
            vs::startup_and_submit(200)?;
            submit::latency(10_000)?;
            vs::throughput(1_000)?;
            gpu(20)?;
            plugins::plugins()?;
            policies::each()?;
            postrun::postrun(1_000)?;
            manifest::manifest(10_000)?;
            archive::archive(512)?;
            report::report(100_000)?;
            backfill::backfill(400)?;
            simulate::simulate(100_000)?;
            estimate::estimate(1_000)?;
            accuracy::accuracy(60)?;
            notify::notify(1_000)?;
            attack::attack(10)?;
            hardening::clients(10)?;
            sse::sse(30)?;
            idle(60)
        }
        other => {
            bail!(
                "unknown benchmark `{other}`: use regress [record], startup, submit, throughput, queue, gpu, plugins, rss, backfill, simulate, estimate, accuracy, slurm, postrun, manifest, archive, report, notify, attack, clients, soak, idle, sse or all"
            )
        }
    }
}
