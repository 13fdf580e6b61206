//! `nightjard plugins check FILE` and `plugins test FILE --snapshot S.json`:
//! a component loaded as the daemon would load it, without a daemon.

use std::path::Path;

use anyhow::{Context, Result};

use super::engine::PluginEngine;
use super::policy::{PluginLimits, Snapshot};
use super::worker::Worker;
use super::{source, validate};

/// The limits the daemon would run plugins under: those of the config
/// (`--config`), else the defaults.
pub fn daemon_limits(config: Option<&Path>) -> Result<PluginLimits> {
    let cfg = crate::config::Config::load(config, None)?;
    Ok(crate::daemon::limits_of(&cfg))
}

/// Loads `file` as the daemon would: a regular file under the size cap, on a
/// worker thread behind the watchdog, with the daemon's limits.
fn load(file: &Path, config: Option<&Path>, limits: &PluginLimits) -> Result<Worker> {
    let wasm = source::read(file, limits.max_file_size)?;
    let config = match config {
        Some(c) => std::fs::read_to_string(c).with_context(|| format!("read {}", c.display()))?,
        None => String::new(),
    };
    let name = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin");
    let engine = PluginEngine::new(None)?;
    Worker::start(&engine, name, wasm, config, limits.clone())
        .map_err(|e| anyhow::anyhow!("{}: {e} ({})", file.display(), e.cause()))
}

/// `plugins check`.
pub fn check(file: &Path, config: Option<&Path>, limits: &PluginLimits) -> Result<i32> {
    let p = load(file, config, limits)?;
    println!(
        "{}: ok (scheduling-policy, nightjar:plugin@{}, sha256 {})",
        file.display(),
        p.version.api,
        p.sha256
    );
    if let Some(note) = p.version.note() {
        println!("note: {note}");
    }
    Ok(0)
}

/// `plugins test`.
pub fn test(
    file: &Path,
    snapshot: &Path,
    config: Option<&Path>,
    limits: &PluginLimits,
) -> Result<i32> {
    let text = std::fs::read_to_string(snapshot)
        .with_context(|| format!("read {}", snapshot.display()))?;
    let snap: Snapshot =
        serde_json::from_str(&text).with_context(|| format!("snapshot {}", snapshot.display()))?;
    let p = load(file, config, limits)?;
    let answer = p
        .evaluate(std::sync::Arc::new(snap.clone()))
        .result
        .map_err(|e| anyhow::anyhow!("{}: {e} ({})", file.display(), e.cause()))?;
    validate::check(&snap, &answer).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    println!("{}", serde_json::to_string_pretty(&answer)?);
    Ok(0)
}
