//! `nightjard plugins test FILE.wasm --trace T.csv`: the plugin author's
//! loop. The trace is simulated under the config's chain as it is, and
//! under the same chain with FILE in it (in place of the member of its
//! name, else added at the end), and the two are printed side by side as
//! `simulate --compare` prints two configs.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Trace, compare, configured, history, simulate};
use nightjar_cli::simulate::Args;

/// The chain member `file` stands for: its file name's stem.
fn member_name(file: &Path) -> Result<String> {
    let name = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        bail!(
            "{}: a plugin's name is its file's stem, and `{name}` is not one: name the file NAME.wasm with letters, digits, `-` and `_`",
            file.display()
        );
    }
    Ok(name.to_string())
}

/// Runs the comparison and prints it (`--json`: as `simulate --compare`).
pub fn main(
    config: Option<&Path>,
    json: bool,
    file: &Path,
    trace_path: &Path,
    gpus: Option<u32>,
    plugin_config: Option<&Path>,
) -> Result<i32> {
    let name = member_name(file)?;
    let args = Args {
        trace: Some(trace_path.to_path_buf()),
        gpus,
        ..Args::default()
    };
    let (cfg, mut opts) = configured(config, &args)?;
    let trace = Trace::read(trace_path)?;
    if let Some(start) = history::start_comment(trace_path) {
        opts.start_ms = start;
    }
    // The chain with the plugin: its members' files copied beside it into a
    // folder of their own (the config's folder is not touched).
    let dir = tempfile::tempdir().context("a folder for the chain with the plugin")?;
    let mut with = cfg.clone();
    let replaced = with.plugins.chain.contains(&name);
    if !replaced {
        with.plugins.chain.push(name.clone());
    }
    for member in &with.plugins.chain {
        let from = if *member == name {
            file.to_path_buf()
        } else {
            cfg.plugin_dir().join(format!("{member}.wasm"))
        };
        // A member with no file there is a built-in (or fails as it would).
        if *member == name || crate::plugins::source::check(&from).unwrap_or(false) {
            let bytes = crate::plugins::source::read(&from, cfg.plugins.max_file_size.as_u64())
                .map_err(|e| anyhow::anyhow!("{}: {e}", from.display()))?;
            std::fs::write(dir.path().join(format!("{member}.wasm")), bytes)?;
        }
    }
    with.plugins.dir = dir.path().to_path_buf();
    if let Some(p) = plugin_config {
        let text = nightjar_core::paths::read_config(p).map_err(anyhow::Error::msg)?;
        let table: toml::Table = text
            .parse()
            .with_context(|| format!("plugin config {}", p.display()))?;
        with.plugin.entry(name.clone()).or_default().config = table;
    }
    let a = simulate(&cfg, &trace, opts.clone())?;
    let b = simulate(&with, &trace, opts).with_context(|| format!("with {}", file.display()))?;
    let a_name = if replaced {
        format!("the chain with {name} as installed")
    } else {
        format!("the chain without {name}")
    };
    let b_name = format!("with {}", file.display());
    let both = compare::Compared {
        a_config: &a_name,
        b_config: &b_name,
        a: &a.summary,
        b: &b.summary,
    };
    both.print(json)?;
    Ok(0)
}
