//! Which validator a task names: a first-party one built into the binary
//! (`outputs`) or a `.wasm` file by absolute path. Compiled once per file
//! content (sha256) and kept.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

pub use crate::task::model::ValidatorRef;

use super::ValidatorPlugin;
use crate::plugins::engine::PluginEngine;
use crate::plugins::limits::PluginLimits;

/// Compiled validators at most kept; past it the cache starts again.
const MAX_CACHED: usize = 64;

/// The validators this daemon has loaded.
pub struct Validators {
    engine: PluginEngine,
    limits: PluginLimits,
    loaded: Mutex<HashMap<String, Arc<ValidatorPlugin>>>,
    /// Held while compiling: many runs ending at once with one validator
    /// compile it once, not once each (each compile racing the others for
    /// the CPU until all of them passed their watchdog).
    compiling: Mutex<()>,
}

impl Validators {
    /// An empty registry compiling with `engine` under `limits`.
    pub fn new(engine: PluginEngine, limits: PluginLimits) -> Validators {
        Validators {
            engine,
            limits,
            loaded: Mutex::new(HashMap::new()),
            compiling: Mutex::new(()),
        }
    }

    /// The first-party validators' names.
    pub fn built_in() -> impl Iterator<Item = &'static str> {
        crate::plugins::first_party::VALIDATORS
            .iter()
            .map(|(n, _)| *n)
    }

    /// The validator `plugin` names (a built-in name or an absolute path),
    /// compiled; or what is wrong, for a person.
    /// A validator file a task names is read as `who`, its owner.
    pub fn get(
        &self,
        plugin: &str,
        who: Option<&crate::sandbox::files::RunAs>,
    ) -> Result<Arc<ValidatorPlugin>, String> {
        let (name, wasm) = if let Some((name, bytes)) = crate::plugins::first_party::VALIDATORS
            .iter()
            .find(|(n, _)| *n == plugin)
        {
            (name.to_string(), bytes.to_vec())
        } else {
            let path = Path::new(plugin);
            if !path.is_absolute() {
                return Err(format!(
                    "`{plugin}` is neither a built-in validator ({}) nor a path to a .wasm file",
                    Self::built_in().collect::<Vec<_>>().join(", ")
                ));
            }
            let limit = self.limits.max_file_size;
            let wasm =
                crate::privsep::as_owner(who, |_| crate::plugins::source::read(path, limit))?
                    .map_err(|e| e.to_string())?;
            (super::name_of(path), wasm)
        };
        let key = format!("{name}:{}", crate::plugins::sha256(&wasm));
        if let Some(v) = self.cached(&key) {
            return Ok(v);
        }
        let _one_at_a_time = self.compiling.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = self.cached(&key) {
            return Ok(v);
        }
        let (engine, limits, n) = (self.engine.clone(), self.limits.clone(), name.clone());
        let watchdog = self.limits.compile_timeout;
        let budget = crate::plugins::worker::Budget::owner(
            crate::plugins::worker::Kind::Validator,
            who.map(|w| w.uid),
        );
        let plugin = crate::plugins::worker::contained(budget, &name, watchdog, move || {
            ValidatorPlugin::load(&engine, &n, &wasm, limits)
        })
        .map_err(|e| format!("validator `{name}` {e}"))?;
        let plugin = Arc::new(plugin);
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if loaded.len() >= MAX_CACHED {
            loaded.clear();
        }
        loaded.insert(key, Arc::clone(&plugin));
        Ok(plugin)
    }

    fn cached(&self, key: &str) -> Option<Arc<ValidatorPlugin>> {
        self.loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_ending_at_once_compile_their_validator_once() {
        let engine = PluginEngine::new(None).unwrap();
        let v = Arc::new(Validators::new(engine, PluginLimits::default()));
        let got: Vec<Arc<ValidatorPlugin>> = (0..3)
            .map(|_| {
                let v = Arc::clone(&v);
                std::thread::spawn(move || v.get("outputs", None).unwrap())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert!(
            got.iter().all(|p| Arc::ptr_eq(p, &got[0])),
            "one compile, shared"
        );
    }
}
