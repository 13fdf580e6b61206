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

/// Warm-ups one owner may have waiting or compiling at once.
const WARM_PER_OWNER: usize = 2;

/// The validators this daemon has loaded.
pub struct Validators {
    engine: PluginEngine,
    limits: PluginLimits,
    loaded: Mutex<HashMap<String, Arc<ValidatorPlugin>>>,
    /// Held while compiling: many runs ending at once with one validator
    /// compile it once, not once each (each compile racing the others for
    /// the CPU until all of them passed their watchdog).
    compiling: Mutex<()>,
    /// The validators being compiled ahead of their runs' ends ([`Validators::warm`]).
    warming: Mutex<std::collections::HashSet<(String, Option<u32>)>>,
}

impl Validators {
    /// An empty registry compiling with `engine` under `limits`.
    pub fn new(engine: PluginEngine, limits: PluginLimits) -> Validators {
        Validators {
            engine,
            limits,
            loaded: Mutex::new(HashMap::new()),
            compiling: Mutex::new(()),
            warming: Mutex::new(std::collections::HashSet::new()),
        }
    }

    /// Compiles the validator `plugin` on a thread of its own, ahead of the
    /// first run it judges (at submit): that run's end is then recorded
    /// without waiting for a compile. One warm-up per validator and owner
    /// at a time, and at most [`WARM_PER_OWNER`] of an owner's; a failure
    /// is only logged (the run's judging says it).
    pub fn warm(self: &Arc<Self>, plugin: &str, who: Option<crate::sandbox::files::RunAs>) {
        let key = (plugin.to_string(), who.as_ref().map(|w| w.uid));
        {
            let mut warming = self.warming.lock().unwrap_or_else(|p| p.into_inner());
            // Compiles are one at a time: an owner queues a few warm-ups at
            // most; the rest compile when their runs end.
            let theirs = warming.iter().filter(|(_, uid)| *uid == key.1).count();
            if theirs >= WARM_PER_OWNER || !warming.insert(key.clone()) {
                return;
            }
        }
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("validator-warm".into())
            .spawn(move || {
                if let Err(e) = me.get(&key.0, who.as_ref()) {
                    tracing::debug!("validator {} not compiled ahead: {e}", key.0);
                }
                me.warming
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&key);
            });
        if let Err(e) = spawned {
            tracing::debug!("cannot start a thread to compile validator {plugin} ahead: {e}");
        }
    }

    /// Whether a validator named as `plugin` (a built-in name or a path)
    /// is compiled and kept.
    #[cfg(test)]
    fn is_loaded(&self, plugin: &str) -> bool {
        let loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let name = if Path::new(plugin).is_absolute() {
            super::name_of(Path::new(plugin))
        } else {
            plugin.to_string()
        };
        loaded
            .keys()
            .any(|k| k.split_once(':').is_some_and(|(n, _)| n == name))
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

    #[test]
    fn a_warm_up_compiles_ahead_and_the_judging_finds_it_ready() {
        let engine = PluginEngine::new(None).unwrap();
        let v = Arc::new(Validators::new(engine, PluginLimits::default()));
        assert!(!v.is_loaded("outputs"));
        v.warm("outputs", None);
        v.warm("outputs", None);
        let t0 = std::time::Instant::now();
        while !v.is_loaded("outputs") {
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(60),
                "never compiled"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let a = v.get("outputs", None).unwrap();
        let b = v.get("outputs", None).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the warmed one is what judging gets");
        // A name that is nothing is only logged.
        v.warm("/nonexistent/x.wasm", None);
    }
}
