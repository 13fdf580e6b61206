//! `nightjar simulate`: a trace replayed through the daemon's own
//! scheduling pieces (the policy chain's components, loaded and limited as
//! the daemon loads them; its snapshot and combine; placement with GPU
//! memory; backfill) on a virtual clock, with no store and no processes.
//! `nightjard` runs it; the client hands it its arguments.
//!
//! `[quotas]` (runs and GPUs per user) and `[gpu] stagger` are applied as
//! the daemon applies them; reserved capacity is the `reserve` policy's, run
//! in the chain like any member. A policy's preemption is honoured as the
//! daemon honours it (`preempt.rs`), checkpoints included.

mod chain;
mod compare;
mod dispatch;
mod engine;
mod held_back;
mod history;
mod html;
mod live;
pub mod plugin_test;
mod preempt;
mod queue;
mod runs;
mod summary;
pub mod trace;
mod wakes;

use std::path::Path;

use anyhow::{Context, Result, bail};
use chrono::TimeZone;

/// What a job that does not fit means for the jobs behind it (the scheduler's).
pub use crate::scheduler::backfill::Mode;
pub use engine::{LEFT_WAITING, Machine, Options, Outcome, Ran, Sim, UNKNOWN_MS, spec_of};
pub use summary::{Spread, Summary, schedule_csv};
pub use trace::{Job, Trace, TraceError};

use crate::config::Config;
use crate::daemon::pipeline::chain::Chain;
use crate::plugins::engine::PluginEngine;
use nightjar_cli::simulate::{Args, Order};

/// A simulation's result: what ran when, and its figures.
pub struct Simulated {
    /// The runs and the jobs that never started.
    pub outcome: Outcome,
    /// The figures.
    pub summary: Summary,
}

/// Simulates `trace` under `cfg` with `opts`. The chain, when `cfg` has
/// one, is loaded as the daemon loads it; a member that does not load is an
/// error naming it (a simulation without it would answer another question).
pub fn simulate(cfg: &Config, trace: &Trace, opts: Options) -> Result<Simulated> {
    let mut cfg = cfg.clone();
    // The CPU budget is a share of the wall clock per minute; a simulated
    // month passes in seconds, so it does not apply. The per-call limits do.
    cfg.plugins.cpu_budget = std::time::Duration::from_secs(u32::MAX as u64);
    let mut chain = if cfg.plugins.chain.is_empty() {
        None
    } else {
        // Not the daemon's compiled-code cache: the config may name a state
        // dir the caller does not own, and loading native code from it
        // would trust its writer. The caller's own cache, where it is safe
        // (`plugins/cache.rs`); else the components are compiled afresh.
        let me = crate::users::euid();
        let cache = crate::plugins::cache::dir(me, crate::users::by_uid(me).map(|a| a.home));
        let engine = PluginEngine::new(cache).context("starting the plugin host")?;
        let mut chain = Chain::load_here(&cfg, Some(&engine));
        // Half the members' calls on a second core: a pass is mostly theirs.
        chain.share_work();
        if let Some(m) = chain.views().into_iter().find(|m| m.state == "disabled") {
            bail!(
                "policy {} did not load ({}): fix it or take it out of plugins.chain to simulate without it",
                m.name,
                m.last_error.unwrap_or_else(|| m.state.clone())
            );
        }
        Some(chain)
    };
    let start_ms = opts.start_ms;
    let gpus = opts.machine.gpus;
    let outcome = Sim::new(&cfg, &trace.jobs, opts, chain.as_mut())
        .refusing_failures()
        .run()
        .map_err(anyhow::Error::msg)?;
    let summary = Summary::of(&trace.jobs, &outcome, gpus, start_ms, &cfg.tariff());
    Ok(Simulated { outcome, summary })
}

/// The default second 0: Monday 2026-11-02 00:00 in the config's zone.
fn default_start(cfg: &Config) -> i64 {
    cfg.tz()
        .with_ymd_and_hms(2026, 11, 2, 0, 0, 0)
        .earliest()
        .map_or(0, |t| t.timestamp_millis())
}

/// How many GPUs the config's GPU backend has, and their memory when all
/// have the same: `sim:8xA100-80GB` is 8 of 80 GiB; NVML is asked.
fn backend_gpus(cfg: &Config) -> Result<(u32, Option<u64>)> {
    use crate::gpu::BackendSpec;
    let ask = "how many GPUs? give --gpus N, or list them in the config (`gpus = [0, 1, 2, 3]`)";
    let found = match cfg.gpu.backend_spec() {
        BackendSpec::Sim(spec) => crate::gpu::sim::parse_spec(&spec)
            .map(|groups| {
                groups
                    .iter()
                    .flat_map(|(n, _, mem)| (0..*n).map(|_| *mem))
                    .collect()
            })
            .map_err(anyhow::Error::msg)?,
        spec @ (BackendSpec::Nvml(_) | BackendSpec::Auto) => match crate::gpu::open(&spec, None) {
            Ok((backend, _)) => backend.inventory().iter().map(|g| g.mem_total).collect(),
            Err(e) => bail!("{ask} (the config's GPU backend cannot say: {e})"),
        },
        BackendSpec::None => Vec::new(),
    };
    let mems: Vec<u64> = found;
    let Some(&first) = mems.first() else {
        bail!("{ask} (the config's GPU backend has none)");
    };
    let same = mems.iter().all(|m| *m == first).then_some(first);
    Ok((mems.len() as u32, same))
}

/// The options `args` ask for under `cfg`.
pub fn options(cfg: &Config, config_text: Option<&str>, args: &Args) -> Result<Options> {
    let gpus = match args.gpus {
        Some(n) if n > trace::MAX_GPUS => {
            bail!("--gpus {n}: at most {} GPUs are simulated", trace::MAX_GPUS)
        }
        Some(0) => bail!("--gpus 0: a simulated machine needs at least one GPU"),
        Some(n) => n,
        None if !cfg.gpus.is_empty() => cfg.gpus.len() as u32,
        None => backend_gpus(cfg)?.0,
    };
    let gpu_mem = match &args.gpu_mem {
        None if args.gpus.is_none() && cfg.gpus.is_empty() => backend_gpus(cfg)?.1,
        None => None,
        Some(t) => Some(
            t.parse::<bytesize::ByteSize>()
                .map_err(|_| anyhow::anyhow!("--gpu-mem {t}: not a size; write one such as 80GiB"))?
                .as_u64(),
        ),
    };
    // The config's `slots` limits runs at once where the file sets it; its
    // default (this machine's cores) says nothing of the machine simulated.
    let slots_set = config_text
        .and_then(|t| t.parse::<toml::Table>().ok())
        .is_some_and(|t| t.contains_key("slots"));
    let order = match args.order {
        Some(Order::Strict) => Mode::Strict,
        Some(Order::FirstFit) => Mode::PassOver,
        Some(Order::Backfill) => Mode::Easy,
        None => crate::daemon::pipeline::backfill::mode_of(cfg.scheduler.order()),
    };
    let start_ms = match &args.start {
        None => default_start(cfg),
        Some(t) => chrono::DateTime::parse_from_rfc3339(t)
            .map_err(|e| {
                anyhow::anyhow!("--start {t}: {e}; write a time such as 2026-11-02T00:00:00+08:00")
            })?
            .timestamp_millis(),
    };
    Ok(Options {
        machine: Machine {
            gpus,
            gpu_mem,
            slots: if slots_set { cfg.slots } else { u32::MAX / 2 },
            share: cfg.gpu.share,
        },
        order,
        start_ms,
    })
}

/// A config as read for a simulation: the config, and the options `args`
/// ask for under it.
fn configured(config: Option<&Path>, args: &Args) -> Result<(Config, Options)> {
    // Read as `Config::load` reads it: at most 1 MiB, so `/dev/zero` is refused.
    let text = match config {
        Some(p) => Some(nightjar_core::paths::read_config(p).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let cfg = Config::load(config, None)?;
    let opts = options(&cfg, text.as_deref(), args)?;
    Ok((cfg, opts))
}

/// The trace `args` name (a file, or the daemon's history), and the
/// second 0 it names, if it names one.
fn trace_of(config: Option<&Path>, args: &Args) -> Result<(Trace, Option<i64>)> {
    match (&args.trace, args.history) {
        (Some(path), _) => Ok((Trace::read(path)?, history::start_comment(path))),
        (None, Some(since)) => {
            let (trace, from) = history::fetch(config, since)?;
            Ok((trace, Some(from)))
        }
        (None, None) => bail!("give a trace file, or --history DURATION for the daemon's own runs"),
    }
}

/// Refuses, before anything is simulated, a `--schedule` or `--html` that
/// is a folder, is in no folder, or is a file the run reads (the trace or
/// a config: writing it would destroy it) or the other output.
fn check_outputs(config: Option<&Path>, args: &Args) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let same = |a: &Path, b: &Path| match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        // Not there yet: the same name.
        _ => matches!((std::path::absolute(a), std::path::absolute(b)), (Ok(a), Ok(b)) if a == b),
    };
    let inputs = [
        ("the trace", args.trace.as_deref()),
        ("the config", config),
        ("the config to compare", args.compare.as_deref()),
        ("--schedule's file", args.schedule.as_deref()),
    ];
    for (flag, out) in [("--schedule", &args.schedule), ("--html", &args.html)] {
        let Some(out) = out.as_deref() else { continue };
        let shown = out.display();
        if out.is_dir() {
            bail!("{flag} {shown}: is a folder; give a file's name (in it, or elsewhere)");
        }
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.is_dir()
        {
            bail!(
                "{flag} {shown}: there is no folder {}; create it, or give a file in one that exists",
                dir.display()
            );
        }
        let read = inputs.iter().filter(|(f, _)| !f.starts_with(flag));
        if let Some((what, _)) = read
            .filter_map(|(w, p)| p.map(|p| (w, p)))
            .find(|(_, p)| same(p, out))
        {
            bail!("{flag} {shown}: is {what}, which writing it would overwrite; give another file");
        }
    }
    Ok(())
}

/// `nightjard simulate`: reads the trace and config, simulates, prints.
pub fn main(config: Option<&Path>, json: bool, args: &Args) -> Result<i32> {
    check_outputs(config, args)?;
    let (cfg, mut opts) = configured(config, args)?;
    let (trace, named_start) = trace_of(config, args)?;
    // The trace's own second 0 unless --start says otherwise.
    let start = named_start.filter(|_| args.start.is_none());
    if let Some(s) = start {
        opts.start_ms = s;
    }
    if let Some(other) = &args.compare {
        let (cfg_b, mut opts_b) = configured(Some(other), args)?;
        if let Some(s) = start {
            opts_b.start_ms = s;
        }
        let a = simulate(&cfg, &trace, opts)?;
        let b = simulate(&cfg_b, &trace, opts_b)
            .with_context(|| format!("under {}", other.display()))?;
        let a_name = config.map_or("defaults".into(), |p| p.display().to_string());
        let b_name = other.display().to_string();
        let both = compare::Compared {
            a_config: &a_name,
            b_config: &b_name,
            a: &a.summary,
            b: &b.summary,
        };
        both.print(json)?;
        return Ok(0);
    }
    let start_ms = opts.start_ms;
    let sim = simulate(&cfg, &trace, opts)?;
    if let Some(out) = &args.schedule {
        let csv = schedule_csv(&trace.jobs, &sim.outcome, start_ms);
        std::fs::write(out, csv).with_context(|| format!("writing {}", out.display()))?;
    }
    if let Some(out) = &args.html {
        let title = format!(
            "nightjar simulate: {} under {}",
            args.trace
                .as_ref()
                .map_or("--history".into(), |t| t.display().to_string()),
            config.map_or("the defaults".into(), |p| p.display().to_string())
        );
        let page = html::page(&html::Page {
            title: &title,
            summary: &sim.summary.text(),
            jobs: &trace.jobs,
            outcome: &sim.outcome,
            gpus: sim.summary.gpus,
            start_ms,
            tariff: &cfg.tariff(),
            tz: cfg.tz(),
        })
        .map_err(|e| anyhow::anyhow!("drawing {}: {e}", out.display()))?;
        std::fs::write(out, page).with_context(|| format!("writing {}", out.display()))?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&sim.summary)?);
    } else {
        print!("{}", sim.summary.text());
    }
    Ok(0)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod reference_tests;

#[cfg(test)]
mod limits_tests;

#[cfg(test)]
mod kept_tests;

#[cfg(test)]
mod shared_tests;

#[cfg(test)]
mod shared_hostile_tests;
