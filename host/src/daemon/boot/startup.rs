//! Faults in the config itself that a chain load finds: a `plugins.chain`
//! name that is neither a built-in nor a file, and a `[plugin.NAME.config]`
//! the plugin rejects. The daemon does not start with either, and says where
//! in the config file the fault is.

use crate::config::Config;
use crate::plugins::policy::PluginError;

/// Why a member could not start.
pub(in crate::daemon) enum StartError {
    /// Its file could not be read, or nothing has its name.
    Source(String),
    /// The plugin failed to load.
    Plugin(PluginError),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Source(e) => write!(f, "{e}"),
            StartError::Plugin(e) => write!(f, "{e} ({})", e.cause()),
        }
    }
}

/// The config fault behind a failed load, if the failure is the config's.
pub(in crate::daemon) fn startup_problem(
    cfg: &Config,
    name: &str,
    e: &StartError,
    missing: bool,
) -> Option<String> {
    match e {
        StartError::Source(_) if missing => {
            let builtins: Vec<&str> = crate::plugins::first_party::FIRST_PARTY
                .iter()
                .map(|(n, _)| *n)
                .collect();
            Some(format!(
                "{}: key `plugins.chain` names `{name}`, which is neither a built-in plugin ({}) nor a file {}; add the file or fix the name",
                cfg.locate("plugins", "chain"),
                builtins.join(", "),
                cfg.plugin_dir().join(format!("{name}.wasm")).display()
            ))
        }
        StartError::Plugin(PluginError::Config { key, message }) => {
            let table = format!("plugin.{name}.config");
            let key = key
                .clone()
                .or_else(|| key_of_parse_error(cfg, name, message));
            let at = key
                .as_deref()
                .map(|k| format!(" key `{k}`"))
                .unwrap_or_default();
            Some(format!(
                "{}: `[{table}]`{at}: the plugin rejects it: {message}",
                cfg.locate(&table, key.as_deref().unwrap_or(""))
            ))
        }
        _ => None,
    }
}

/// The key a TOML parse error in a plugin's config points at: the plugin
/// parsed the TOML the host wrote from `[plugin.NAME.config]` and said "at
/// line N"; line N of that text names the key.
fn key_of_parse_error(cfg: &Config, name: &str, message: &str) -> Option<String> {
    let rest = &message[message.find("at line ")? + "at line ".len()..];
    let line: usize = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    let entry = cfg.plugin.get(name)?;
    let text = toml::to_string(&entry.config).ok()?;
    let key = text
        .lines()
        .nth(line.checked_sub(1)?)?
        .split('=')
        .next()?
        .trim();
    (!key.is_empty() && !key.starts_with('[')).then(|| key.trim_matches('"').to_string())
}

/// `e` as `plugins ls` and the log show it: a plugin that failed to load is
/// named by its file (a source error names it already).
pub(in crate::daemon) fn named(source: &str, e: &StartError) -> String {
    match e {
        StartError::Plugin(_) if source != "built-in" => format!("{source}: {e}"),
        _ => e.to_string(),
    }
}
