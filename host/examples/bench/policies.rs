//! Each first-party policy alone, one pass over the `plugins` bench's
//! 10,000-task snapshot: the queue unchanged (a fresh snapshot, the clock on
//! a second), then 1% of it new each pass. With
//! `NIGHTJAR_BENCH_PLUGINS_FROM=DIR`, the components in DIR with the same
//! names (`fair_share.wasm`, ...; a build of another contract, say) are
//! timed beside the built-in ones, A B A B, and the ratio printed: how much
//! each policy gained from a contract change, measured in one run.
//!
//! The clock is the `plugins` snapshot's, 16:00 UTC, and a pass carries
//! no tariff, so offpeak-tariff judges by its fallback window (23:00 to
//! 07:00): outside it on every unchanged pass; the churned passes move the
//! clock an hour each, some inside.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nightjar::plugins::engine::PluginEngine;
use nightjar::plugins::pass::Pass;
use nightjar::plugins::policy::{PluginLimits, PolicyPlugin, Snapshot};

use super::median;
use super::plugins::{churned, host_snapshot};

/// Median ms of one pass of `plugin` over each snapshot, in order.
fn passes(plugin: &mut PolicyPlugin, snaps: &[Arc<Snapshot>]) -> Result<f64> {
    let mut t = Vec::new();
    for s in snaps {
        let start = Instant::now();
        plugin
            .evaluate(&Pass::new(Arc::clone(s)))
            .map_err(anyhow::Error::msg)?;
        t.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(&t))
}

/// (unchanged, churned) median ms for the component `wasm`, on a fresh
/// instance that first takes the whole snapshot once.
fn timed(
    engine: &PluginEngine,
    name: &str,
    wasm: &[u8],
    same: &[Arc<Snapshot>],
    churn: &[Arc<Snapshot>],
) -> Result<(f64, f64)> {
    let limits = PluginLimits {
        evaluate_timeout: Duration::from_secs(5),
        ..PluginLimits::default()
    };
    let mut plugin =
        PolicyPlugin::load(engine, name, wasm, "", limits).map_err(anyhow::Error::msg)?;
    passes(&mut plugin, &same[..1])?;
    let a = passes(&mut plugin, &same[1..])?;
    plugin.instantiate().map_err(anyhow::Error::msg)?;
    passes(&mut plugin, &churn[..1])?;
    let b = passes(&mut plugin, &churn[1..])?;
    Ok((a, b))
}

/// Prints each first-party policy's pass, and the other build's beside it.
pub fn each() -> Result<()> {
    let cache = tempfile::tempdir()?;
    let engine = PluginEngine::new(Some(cache.path().to_path_buf()))?;
    let snap = host_snapshot(10_000);
    let same: Vec<Arc<Snapshot>> = (0..22)
        .map(|i| {
            let mut s = snap.clone();
            s.now += i * 1_000;
            Arc::new(s)
        })
        .collect();
    let mut churn = Vec::new();
    let mut s = snap.clone();
    for round in 0..22 {
        s = churned(&s, 100, round);
        churn.push(Arc::new(s.clone()));
    }
    let from = std::env::var_os("NIGHTJAR_BENCH_PLUGINS_FROM").map(PathBuf::from);
    println!(
        "  each policy alone, one pass over the same 10,000 tasks (unchanged queue / 1% new each pass; median of 21, the better of two A B rounds):"
    );
    for (name, wasm) in nightjar::plugins::first_party::FIRST_PARTY {
        let other = match &from {
            Some(dir) => {
                let path = dir.join(format!("{}.wasm", name.replace('-', "_")));
                Some(std::fs::read(&path).with_context(|| format!("read {}", path.display()))?)
            }
            None => None,
        };
        // A B A B: the built-in build, then the other, twice.
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for _ in 0..2 {
            ours.push(timed(&engine, name, wasm, &same, &churn)?);
            if let Some(w) = &other {
                theirs.push(timed(&engine, name, w, &same, &churn)?);
            }
        }
        let best = |v: &[(f64, f64)]| {
            let a = v.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
            let b = v.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
            (a, b)
        };
        let (a, b) = best(&ours);
        if theirs.is_empty() {
            println!("    {name:<15} {a:6.2} ms / {b:6.2} ms");
        } else {
            let (x, y) = best(&theirs);
            println!(
                "    {name:<15} {a:6.2} ms / {b:6.2} ms; the other build {x:6.2} ms / {y:6.2} ms: {:.2}x / {:.2}x faster",
                x / a,
                y / b
            );
        }
    }
    Ok(())
}
