//! Where a notifier's component comes from: a first-party one built into
//! the binary (`webhook`, `wecom`) or a `.wasm` file (relative paths start
//! at the config file's folder).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::config::Config;
use crate::plugins::engine::PluginEngine;
use crate::plugins::notifier::NotifierPlugin;

/// The notifiers built into the binary.
pub fn built_in() -> impl Iterator<Item = &'static str> {
    crate::plugins::first_party::NOTIFIERS
        .iter()
        .map(|(n, _)| *n)
}

fn engine(cfg: &Config) -> Result<&'static PluginEngine, String> {
    static ENGINE: OnceLock<Result<PluginEngine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            PluginEngine::new(Some(cfg.plugin_cache_dir())).map_err(|e| format!("{e:#}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Notifier `name`'s plugin `plugin`, compiled; or what is wrong.
pub fn load(cfg: &Config, name: &str, plugin: &str) -> Result<Arc<NotifierPlugin>, String> {
    let limits = cfg.plugins.limits();
    let wasm = match crate::plugins::first_party::NOTIFIERS
        .iter()
        .find(|(n, _)| *n == plugin)
    {
        Some((_, bytes)) => bytes.to_vec(),
        None if plugin.ends_with(".wasm") || plugin.contains('/') => {
            let path = match &cfg.origin {
                Some((file, _)) => nightjar_core::paths::from_config(file, Path::new(plugin)),
                None => Path::new(plugin).to_path_buf(),
            };
            crate::plugins::source::read(&path, limits.max_file_size)
                .map_err(|e| format!("[notifier.{name}] plugin: {e}"))?
        }
        None => {
            return Err(format!(
                "[notifier.{name}] plugin: `{plugin}` is neither built in ({}) nor a path to a .wasm notifier",
                built_in().collect::<Vec<_>>().join(", ")
            ));
        }
    };
    let engine = engine(cfg)?.clone();
    let n = name.to_string();
    crate::plugins::worker::contained(
        crate::plugins::worker::Budget::daemon(crate::plugins::worker::Kind::Notifier),
        name,
        limits.compile_timeout,
        move || NotifierPlugin::load(&engine, &n, &wasm, limits),
    )
    .map(Arc::new)
    .map_err(|e| format!("[notifier.{name}] plugin `{plugin}` {e}"))
}
