//! Where each chain member's component comes from: a file in the plugin
//! folder, checked and size-capped, else a built-in.

use crate::config::Config;
use crate::plugins::source;

/// Where plugin `name` comes from: `<plugins.dir>/NAME.wasm` when something
/// is there (and it must be a regular file under the size cap), else a built-in.
pub(in crate::daemon) fn source_of(cfg: &Config, name: &str) -> (String, Result<Vec<u8>, String>) {
    let file = cfg.plugin_dir().join(format!("{name}.wasm"));
    let shown = file.display().to_string();
    match source::check(&file) {
        Ok(true) => {
            let bytes =
                source::read(&file, cfg.plugins.max_file_size.as_u64()).map_err(|e| e.to_string());
            return (shown, bytes);
        }
        Err(e) => return (shown, Err(e.to_string())),
        Ok(false) => {}
    }
    let builtin = crate::plugins::first_party::FIRST_PARTY
        .iter()
        .find(|(n, _)| *n == name);
    (
        "built-in".to_string(),
        builtin
            .map(|(_, w)| w.to_vec())
            .ok_or_else(|| format!("no {shown} and no built-in plugin of that name")),
    )
}

pub(in crate::daemon) use crate::plugins::sha256;
