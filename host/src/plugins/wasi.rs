//! The WASI a plugin sees: no filesystem, network, environment or real clock;
//! randomness that is a pure function of the input; and no import that can
//! block. A blocking call (`wasi:io/poll`, a clock subscription) traps with
//! the import named instead of sleeping on real time, where the epoch
//! deadline cannot reach it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmtime::StoreContextMut;
use wasmtime::component::Linker;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiView};

use super::sink::LogSink;
use crate::sync::LockUnpoisoned;

/// The version of the WASI 0.2 interfaces wasmtime-wasi defines; guests that
/// import any 0.2.x version are served by these definitions.
const WASI_VERSION: &str = "0.2.12";

/// The imports that would block the calling thread, by interface.
const BLOCKING: &[(&str, &[&str])] = &[
    ("wasi:io/poll", &["poll", "[method]pollable.block"]),
    (
        "wasi:clocks/monotonic-clock",
        &["subscribe-duration", "subscribe-instant"],
    ),
];

/// A plugin called an import that would block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "called `{0}`, which would block the host: plugins may not sleep or wait (time comes from the snapshot)"
)]
pub struct Blocked(pub String);

/// A store whose plugin draws its randomness from a [`SeededRng`].
pub trait Seeded {
    /// The plugin's random stream.
    fn rng(&self) -> &SeededRng;
}

/// Adds WASI (synchronous) to `linker`, with every blocking import replaced
/// by one that traps with [`Blocked`], and `insecure-seed` answering the
/// store's seed (made when first asked for).
pub fn add_to_linker<T: WasiView + Seeded + 'static>(
    linker: &mut Linker<T>,
) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_sync(linker)?;
    linker.allow_shadowing(true);
    for (interface, funcs) in BLOCKING {
        let mut inst = linker.instance(&format!("{interface}@{WASI_VERSION}"))?;
        for func in *funcs {
            let what = format!("{interface}.{func}");
            inst.func_new(func, move |_, _, _, _| {
                Err(wasmtime::Error::new(Blocked(what.clone())))
            })?;
        }
    }
    let mut seed = linker.instance(&format!("wasi:random/insecure-seed@{WASI_VERSION}"))?;
    seed.func_wrap("insecure-seed", |cx: StoreContextMut<'_, T>, (): ()| {
        Ok(((cx.data().rng().seed_value(), 0u64),))
    })?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Where a call's seed comes from, the first time the plugin draws.
pub type SeedSource = Box<dyn FnOnce() -> u64 + Send>;

/// A random stream whose state the host sets before each call, so the same
/// input gives the same bytes (SplitMix64). The seed of a call can be given
/// as a source, run only if the plugin draws (a seed is a hash of the whole
/// snapshot; most policies never draw).
#[derive(Clone, Default)]
pub struct SeededRng {
    state: Arc<AtomicU64>,
    seed: Arc<AtomicU64>,
    armed: Arc<AtomicBool>,
    pending: Arc<Mutex<Option<SeedSource>>>,
}

impl SeededRng {
    /// Restarts the stream from `seed`.
    pub fn seed(&self, seed: u64) {
        *self.pending.lock_unpoisoned() = None;
        self.armed.store(false, Ordering::Release);
        self.seed.store(seed, Ordering::Relaxed);
        self.state.store(seed, Ordering::Relaxed);
    }

    /// Restarts the stream from the seed `source` makes, when it is first
    /// needed.
    pub fn seed_lazily(&self, source: SeedSource) {
        *self.pending.lock_unpoisoned() = Some(source);
        self.armed.store(true, Ordering::Release);
    }

    /// Makes the pending seed, if there is one.
    fn ready(&self) {
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        let source = self.pending.lock_unpoisoned().take();
        if let Some(source) = source {
            let seed = source();
            self.seed.store(seed, Ordering::Relaxed);
            self.state.store(seed, Ordering::Relaxed);
        }
        self.armed.store(false, Ordering::Release);
    }

    /// The seed the stream started from (`wasi:random/insecure-seed`).
    pub fn seed_value(&self) -> u64 {
        self.ready();
        self.seed.load(Ordering::Relaxed)
    }

    fn next(&self) -> u64 {
        let mut z = self
            .state
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl rand_core::TryRng for SeededRng {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        self.ready();
        Ok(self.next() as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        self.ready();
        Ok(self.next())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.ready();
        for chunk in dst.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        Ok(())
    }
}

/// A wall clock stuck at the epoch: policies read time from the snapshot only.
struct FrozenWall;
impl wasmtime_wasi::HostWallClock for FrozenWall {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

/// A monotonic clock that never moves.
struct FrozenMono;
impl wasmtime_wasi::HostMonotonicClock for FrozenMono {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

/// The WASI context of one plugin store: output into `sink`, frozen clocks,
/// randomness from `rng` (seeded from the snapshot before each call; the
/// insecure seed comes from it too, see [`add_to_linker`]) of at most
/// `MAX_RANDOM_BYTES` a call, no sockets, no files, no environment.
pub fn context(sink: &LogSink, rng: &SeededRng) -> WasiCtx {
    builder(sink, rng).build()
}

/// What every plugin's WASI context has (see [`context`]).
fn builder(sink: &LogSink, rng: &SeededRng) -> WasiCtxBuilder {
    let mut b = WasiCtxBuilder::new();
    b.stdout(sink.clone())
        .stderr(sink.clone())
        .wall_clock(FrozenWall)
        .monotonic_clock(FrozenMono)
        .secure_random(rng.clone())
        .insecure_random(rng.clone())
        .max_random_size(super::limits::MAX_RANDOM_BYTES)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    b
}

/// The WASI context of a result validator's store: as [`context`], plus the
/// run's output folder read-only at `/output` when there is one. The folder
/// is opened once, as a real directory (no symbolic link on its way:
/// [`crate::privsep::open::real_dir`]), on the calling thread (which acts
/// as the task's owner), and WASI is given that very descriptor (through
/// `/proc/self/fd`, never the path again), so a task cannot point the view
/// elsewhere by swapping a folder for a link. Its file operations run on
/// the calling thread too (not a pool's), so every open inside the view is
/// checked as the owner's.
pub fn validator_context(
    sink: &LogSink,
    rng: &SeededRng,
    output: Option<&std::path::Path>,
) -> wasmtime::Result<WasiCtx> {
    use std::os::fd::AsRawFd;
    let mut b = builder(sink, rng);
    b.allow_blocking_current_thread(true);
    if let Some(dir) = output {
        let held = crate::privsep::open::real_dir(dir).map_err(wasmtime::Error::msg)?;
        let fd = format!("/proc/self/fd/{}", held.as_raw_fd());
        b.preopened_dir(&fd, "/output", wasmtime_wasi::FsPerms::ReadOnly)?;
    }
    Ok(b.build())
}

/// `Ok` when `path` is a directory reached without following any symbolic
/// link (it is its own canonical form); otherwise what it is instead.
pub fn real_dir(path: &std::path::Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{} is a symbolic link; validators see only a real folder",
            path.display()
        ));
    }
    if !meta.is_dir() {
        return Err(format!("{} is not a folder", path.display()));
    }
    let canonical = std::fs::canonicalize(path)
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
    if canonical != path {
        return Err(format!(
            "{} is reached through a symbolic link (it resolves to {}); validators see only a real folder",
            path.display(),
            canonical.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::TryRng;

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        let mut a = SeededRng::default();
        let mut b = SeededRng::default();
        a.seed(42);
        b.seed(42);
        let (mut x, mut y) = ([0u8; 13], [0u8; 13]);
        a.try_fill_bytes(&mut x).unwrap();
        b.try_fill_bytes(&mut y).unwrap();
        assert_eq!(x, y);
        b.seed(43);
        b.try_fill_bytes(&mut y).unwrap();
        assert_ne!(x, y);
    }

    #[test]
    fn a_lazy_seed_is_made_once_and_only_when_drawn() {
        use std::sync::atomic::AtomicUsize;
        let made = Arc::new(AtomicUsize::new(0));
        let lazy = SeededRng::default();
        let count = Arc::clone(&made);
        lazy.seed_lazily(Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
            42
        }));
        assert_eq!(made.load(Ordering::SeqCst), 0, "nothing drawn yet");
        let mut eager = SeededRng::default();
        eager.seed(42);
        let (mut x, mut y) = ([0u8; 16], [0u8; 16]);
        lazy.clone().try_fill_bytes(&mut x).unwrap();
        eager.try_fill_bytes(&mut y).unwrap();
        assert_eq!(x, y, "the same stream as seeded at once");
        assert_eq!(lazy.seed_value(), 42);
        assert_eq!(made.load(Ordering::SeqCst), 1);
        lazy.seed(7);
        assert_eq!(lazy.seed_value(), 7, "a new call's seed replaces it");
    }
}
