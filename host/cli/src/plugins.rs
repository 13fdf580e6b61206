//! `nightjar plugins ls | reload | check FILE | test FILE --snapshot SNAP.json
//! | test FILE --trace T.csv | new NAME --kind KIND`. `check` and `test` work offline, so authors can
//! try a plugin without a daemon; they need the plugin host, so `nightjard`
//! runs them. `new` writes a plugin crate (`plugin_new`), in the client.

use std::path::PathBuf;

use anyhow::Result;
use nightjar_core::api::{self, ReloadOutcome};
use nightjar_core::client::Client;

use super::table;

/// The `plugins` sub-verbs.
#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// The daemon's policy chain: each plugin's source, state and last failure.
    Ls,
    /// Reload the chain's plugin files now (also on SIGHUP and on a change in the folder).
    Reload,
    /// Check a component offline: it compiles, implements a world this host
    /// loads (scheduling-policy, incremental-scheduling-policy,
    /// delta-scheduling-policy, result-validator or notifier) and accepts its
    /// config.
    Check {
        /// The `.wasm` component.
        file: PathBuf,
        /// A TOML file with the plugin's config (what `[plugin.NAME.config]`
        /// holds). Not `--config`: that is the daemon's config, whose limits
        /// the check applies.
        #[arg(long)]
        plugin_config: Option<PathBuf>,
    },
    /// Evaluate a snapshot offline and print the validated answer as JSON;
    /// or, with `--trace`, simulate a trace with the plugin in the chain
    /// (added, or in place of the member of its name) and without it, side
    /// by side.
    #[command(group(clap::ArgGroup::new("input").required(true).args(["snapshot", "trace"])))]
    Test {
        /// The `.wasm` component (its name in the chain is the file's stem).
        file: PathBuf,
        /// A snapshot in JSON (its shape: the book's "Testing a plugin offline").
        #[arg(long)]
        snapshot: Option<PathBuf>,
        /// A trace (as `nightjar simulate` reads it): the config's chain
        /// with the plugin against the chain without it.
        #[arg(long, value_name = "T.csv")]
        trace: Option<PathBuf>,
        /// With --trace: the simulated machine's GPUs (default: as `simulate`).
        #[arg(long, requires = "trace")]
        gpus: Option<u32>,
        /// A TOML file with the plugin's config (see `check`).
        #[arg(long)]
        plugin_config: Option<PathBuf>,
    },
    /// Write a new plugin crate from the SDK (`--kind policy`, `notifier`
    /// or `validator`) that builds for wasm32-wasip2 and passes `check`.
    New(super::plugin_new::Args),
}

/// Runs `plugins ls` against the daemon.
pub fn ls(client: &mut Client, json: bool) -> Result<i32> {
    let views = client.call(api::PluginList {})?;
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
                (Some(e), Some(at)) => {
                    format!("{} (at {})", e, nightjar_core::time::fmt_local(*at))
                }
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

/// Runs `plugins reload` against the daemon.
pub fn reload(client: &mut Client, json: bool) -> Result<i32> {
    let changes = client.call(api::PluginReload {})?;
    if json {
        super::print_json(&changes)?;
    } else if changes.is_empty() {
        println!("no plugin changed");
    } else {
        changes
            .iter()
            .for_each(|c| println!("{}", table::clean(&c.to_string())));
    }
    let rejected = changes.iter().any(|c| c.outcome == ReloadOutcome::Rejected);
    Ok(if rejected { 1 } else { 0 })
}
