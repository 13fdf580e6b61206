//! The wasmtime engine every plugin shares: epoch interruption for per-call
//! deadlines, a bounded stack, and an on-disk cache of compiled code keyed by
//! the component's sha256 and the engine, so a restart does not recompile.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

use super::policy::PluginError;

/// How often the epoch advances while a plugin call is in flight.
pub const TICK: Duration = Duration::from_millis(5);

/// The engine's settings: the daemon's and its compile children's (their
/// code is loaded only by an engine with the very same settings).
pub fn config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.max_wasm_stack(512 * 1024);
    config
}

/// The shared engine, its deadline ticker and its code cache.
#[derive(Clone)]
pub struct PluginEngine {
    /// The wasmtime engine.
    pub engine: Engine,
    busy: Arc<AtomicUsize>,
    ticker: Arc<Ticker>,
    cache_dir: Option<PathBuf>,
}

/// The deadline ticker's thread, ended when the last clone of its engine
/// is dropped (a `simulate --compare` makes one engine a run).
struct Ticker {
    thread: std::thread::Thread,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

impl PluginEngine {
    /// An engine whose compiled code is cached in `cache_dir` (if given).
    pub fn new(cache_dir: Option<PathBuf>) -> Result<PluginEngine> {
        let engine =
            Engine::new(&config()).map_err(|e| anyhow::anyhow!("create the wasm engine: {e}"))?;
        let busy = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (e, b, end) = (engine.clone(), Arc::clone(&busy), Arc::clone(&stop));
        // The ticker sleeps (parked) unless a call is in flight, so an idle
        // daemon pays nothing for deadlines.
        let handle = std::thread::Builder::new()
            .name("nightjar-epoch".into())
            .spawn(move || {
                while !end.load(Ordering::Acquire) {
                    if b.load(Ordering::Acquire) == 0 {
                        std::thread::park();
                        continue;
                    }
                    std::thread::sleep(TICK);
                    e.increment_epoch();
                }
            })
            .context("start the epoch ticker")?;
        Ok(PluginEngine {
            engine,
            busy,
            ticker: Arc::new(Ticker {
                thread: handle.thread().clone(),
                stop,
            }),
            cache_dir,
        })
    }

    /// Runs `f` (a plugin call) with the deadline ticker running. The
    /// call is counted off however it ends: a panic in the host's side of
    /// it (caught by a worker on its caller's thread) must not leave the
    /// ticker waking every 5 ms for the rest of the daemon's life.
    pub fn with_deadline<R>(&self, f: impl FnOnce() -> R) -> R {
        /// Counts one call off when dropped.
        struct InFlight<'a>(&'a AtomicUsize);
        impl Drop for InFlight<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.busy.fetch_add(1, Ordering::AcqRel);
        let _in_flight = InFlight(&self.busy);
        self.ticker.thread.unpark();
        f()
    }

    /// Epoch ticks for a deadline of `d`.
    pub fn ticks(d: Duration) -> u64 {
        (d.as_micros() / TICK.as_micros()).max(1) as u64 + 1
    }

    /// Compiles `wasm` (or loads it from the cache) into a component.
    pub fn component(&self, wasm: &[u8]) -> Result<Component, PluginError> {
        let key = self.cache_key(wasm);
        if let Some(path) = key.as_deref().filter(|p| p.exists()) {
            // SAFETY: the file was written by `Component::serialize` of this
            // engine's configuration (the key includes the engine's
            // compatibility hash) into a folder only the daemon writes.
            if let Ok(c) = unsafe { Component::deserialize_file(&self.engine, path) } {
                // A use: retention prunes entries not used for a while.
                let _ = std::fs::File::options()
                    .write(true)
                    .open(path)
                    .and_then(|f| f.set_modified(std::time::SystemTime::now()));
                return Ok(c);
            }
        }
        let (component, bytes) = match super::compile::child() {
            Some(child) => {
                let bytes = child.compile(wasm)?;
                // SAFETY: the bytes are `Component::serialize` of this very
                // binary's engine settings ([`config`]), written by the
                // compile child it started; a mismatch is refused by
                // wasmtime's own header check.
                let c = unsafe { Component::deserialize(&self.engine, &bytes) }.map_err(|e| {
                    PluginError::CompileLimit(format!("cannot load the compiled code: {e:?}"))
                })?;
                (c, Some(bytes))
            }
            None => {
                let c = Component::new(&self.engine, wasm)
                    .map_err(|e| PluginError::Compile(format!("{e:?}")))?;
                let bytes = key.as_ref().and_then(|_| c.serialize().ok());
                (c, bytes)
            }
        };
        if let (Some(path), Some(bytes)) = (key, bytes) {
            // A name of its own per writer: daemons sharing a cache never
            // interleave writes; the rename publishes a whole file.
            let tmp = path.with_extension(format!(
                "{}.{}.tmp",
                std::process::id(),
                crate::time::now_ms()
            ));
            if std::fs::create_dir_all(path.parent().unwrap_or(Path::new("."))).is_ok()
                && std::fs::write(&tmp, bytes).is_ok()
            {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
        Ok(component)
    }

    fn cache_key(&self, wasm: &[u8]) -> Option<PathBuf> {
        let dir = self.cache_dir.as_ref()?;
        let sha = Sha256::digest(wasm);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut h);
        let hex: String = sha.iter().map(|b| format!("{b:02x}")).collect();
        Some(dir.join(format!("{hex}-{:016x}.cwasm", h.finish())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_panics_is_counted_off_and_the_ticker_sleeps_again() {
        let engine = PluginEngine::new(None).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            engine.with_deadline(|| panic!("the host's side of a call"))
        }));
        assert!(caught.is_err());
        assert_eq!(engine.busy.load(Ordering::Acquire), 0, "no call in flight");
        assert_eq!(engine.with_deadline(|| 7), 7);
        assert_eq!(engine.busy.load(Ordering::Acquire), 0);
    }

    #[test]
    fn the_ticker_thread_ends_with_the_last_clone_of_its_engine() {
        let engine = PluginEngine::new(None).unwrap();
        let other = engine.clone();
        // The ticker thread holds the other reference to its stop flag.
        let flag = Arc::downgrade(&engine.ticker.stop);
        drop(engine);
        assert_eq!(flag.strong_count(), 2, "a clone lives: the ticker runs");
        assert_eq!(other.with_deadline(|| 7), 7);
        drop(other);
        let ended = (0..10_000).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            flag.upgrade().is_none()
        });
        assert!(ended, "the ticker thread still runs");
    }
}
