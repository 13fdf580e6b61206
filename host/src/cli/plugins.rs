//! `nightjar plugins ls | check FILE | test FILE --snapshot SNAP.json`.
//! `check` and `test` work offline, so authors can try a policy without a daemon.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::table;
use crate::api::Request;
use crate::api::client::Client;
use crate::daemon::MemberView;
use crate::plugins::engine::PluginEngine;
use crate::plugins::policy::{PluginLimits, Snapshot};
use crate::plugins::worker::Worker;
use crate::plugins::{source, validate};

/// The `plugins` sub-verbs.
#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// The daemon's policy chain: each plugin's source, state and last failure.
    Ls,
    /// Reload the chain's plugin files now (also on SIGHUP and on a change in the folder).
    Reload,
    /// Check a component offline: compiles, implements scheduling-policy, accepts its config.
    Check {
        /// The `.wasm` component.
        file: PathBuf,
        /// A TOML file with the plugin's config (what `[plugin.NAME.config]` holds).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Evaluate a snapshot offline and print the validated answer as JSON.
    Test {
        /// The `.wasm` component.
        file: PathBuf,
        /// A snapshot in JSON (`nightjar plugins test --help` shows the shape in the README).
        #[arg(long)]
        snapshot: PathBuf,
        /// A TOML file with the plugin's config.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

/// Runs `plugins ls` against the daemon.
pub fn ls(client: &mut Client, json: bool) -> Result<i32> {
    let views: Vec<MemberView> = client.call(&Request::Plugins)?;
    if json {
        super::print_json(&views)?;
        return Ok(0);
    }
    if views.is_empty() {
        println!("no policy plugins: the built-in order (priority, then submit time) is in force");
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = views
        .iter()
        .map(|v| {
            let last = match (&v.last_error, &v.last_failure_at) {
                (Some(e), Some(at)) => format!("{} (at {})", e, crate::time::fmt_local(*at)),
                (Some(e), None) => e.clone(),
                _ => String::new(),
            };
            vec![
                v.name.escape_debug().to_string(),
                v.state.clone(),
                v.api_version.clone().unwrap_or_default(),
                v.on_failure.clone(),
                v.failure_rate.clone(),
                format!("{:.1}%", v.cpu_percent),
                v.source.escape_debug().to_string(),
                last.escape_debug().to_string(),
            ]
        })
        .collect();
    table::print(
        &[
            "NAME",
            "STATE",
            "API",
            "ON_FAILURE",
            "FAILED",
            "CPU",
            "SOURCE",
            "LAST ERROR",
        ],
        &rows,
    );
    Ok(0)
}

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

/// Runs `plugins reload` against the daemon.
pub fn reload(client: &mut Client, json: bool) -> Result<i32> {
    let changes: Vec<String> = client.call(&Request::PluginsReload)?;
    if json {
        super::print_json(&changes)?;
    } else if changes.is_empty() {
        println!("no plugin changed");
    } else {
        changes.iter().for_each(|c| println!("{c}"));
    }
    Ok(if changes.iter().any(|c| c.contains("rejected")) {
        1
    } else {
        0
    })
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
    super::print_json(&answer)?;
    Ok(0)
}
