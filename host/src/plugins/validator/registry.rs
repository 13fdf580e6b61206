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
use crate::sync::LockUnpoisoned;

/// Compiled validators at most kept; past it the oldest goes.
const MAX_CACHED: usize = 64;

/// Compiled validators at most kept for one owner; past it their oldest
/// goes (one owner cycling through files cannot empty everyone's cache).
const MAX_CACHED_PER_OWNER: usize = 16;

/// Warm-ups one owner may have waiting or compiling at once.
const WARM_PER_OWNER: usize = 2;

/// A compiled validator kept, with whom it was compiled for and when.
struct Kept {
    plugin: Arc<ValidatorPlugin>,
    owner: Option<u32>,
    seq: u64,
}

/// The validators this daemon has loaded.
pub struct Validators {
    engine: PluginEngine,
    limits: PluginLimits,
    loaded: Mutex<HashMap<String, Kept>>,
    /// Who may compile now: each owner one at a time (many runs ending at
    /// once with one validator compile it once, not once each), two in all.
    gate: super::gate::Gate,
    /// Insertions so far: the age of what is kept.
    inserted: std::sync::atomic::AtomicU64,
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
            gate: super::gate::Gate::default(),
            inserted: std::sync::atomic::AtomicU64::new(0),
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
            let mut warming = self.warming.lock_unpoisoned();
            // An owner's compiles are one at a time: she queues a few
            // warm-ups at most; the rest compile when their runs end.
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
                me.warming.lock_unpoisoned().remove(&key);
            });
        if let Err(e) = spawned {
            tracing::debug!("cannot start a thread to compile validator {plugin} ahead: {e}");
        }
    }

    /// Whether a validator named as `plugin` (a built-in name or a path)
    /// is compiled and kept.
    #[cfg(test)]
    fn is_loaded(&self, plugin: &str) -> bool {
        let loaded = self.loaded.lock_unpoisoned();
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
        let owner = who.map(|w| w.uid);
        let turn = self.gate.turn_of(owner);
        let _pass = self.gate.enter(&turn);
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
        self.keep(key, owner, Arc::clone(&plugin));
        Ok(plugin)
    }

    /// Keeps `plugin` under `key`, making room: the owner's oldest past
    /// [`MAX_CACHED_PER_OWNER`], else the oldest of all past [`MAX_CACHED`].
    fn keep(&self, key: String, owner: Option<u32>, plugin: Arc<ValidatorPlugin>) {
        let seq = self
            .inserted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut loaded = self.loaded.lock_unpoisoned();
        let oldest = |loaded: &HashMap<String, Kept>, of: Option<Option<u32>>| {
            loaded
                .iter()
                .filter(|(_, k)| of.is_none_or(|o| k.owner == o))
                .min_by_key(|(_, k)| k.seq)
                .map(|(key, _)| key.clone())
        };
        let theirs = loaded.values().filter(|k| k.owner == owner).count();
        let evict = if theirs >= MAX_CACHED_PER_OWNER {
            oldest(&loaded, Some(owner))
        } else if loaded.len() >= MAX_CACHED {
            oldest(&loaded, None)
        } else {
            None
        };
        if let Some(k) = evict {
            loaded.remove(&k);
        }
        loaded.insert(key, Kept { plugin, owner, seq });
    }

    fn cached(&self, key: &str) -> Option<Arc<ValidatorPlugin>> {
        self.loaded
            .lock_unpoisoned()
            .get(key)
            .map(|k| Arc::clone(&k.plugin))
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

    #[test]
    fn one_owner_cycling_through_files_keeps_at_most_her_share_and_evicts_only_hers() {
        let engine = PluginEngine::new(None).unwrap();
        let v = Validators::new(engine, PluginLimits::default());
        let plugin = v.get("outputs", None).unwrap();
        v.keep("bob:1".into(), Some(1002), Arc::clone(&plugin));
        for i in 0..40 {
            v.keep(format!("alice:{i}"), Some(1001), Arc::clone(&plugin));
        }
        assert!(v.cached("bob:1").is_some(), "bob's stays");
        assert!(v.cached("alice:39").is_some() && v.cached("alice:0").is_none());
        let loaded = v.loaded.lock().unwrap();
        let hers = loaded.values().filter(|k| k.owner == Some(1001)).count();
        assert_eq!(hers, MAX_CACHED_PER_OWNER);
    }
}
