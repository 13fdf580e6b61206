//! The WASI a plugin sees: no filesystem, network, environment or real clock;
//! randomness that is a pure function of the input; and no import that can
//! block. A blocking call (`wasi:io/poll`, a clock subscription) traps with
//! the import named instead of sleeping on real time, where the epoch
//! deadline cannot reach it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiView};

use super::sink::LogSink;

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

/// Adds WASI (synchronous) to `linker`, with every blocking import replaced
/// by one that traps with [`Blocked`].
pub fn add_to_linker<T: WasiView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
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
    linker.allow_shadowing(false);
    Ok(())
}

/// A random stream whose state the host sets before each call, so the same
/// input gives the same bytes (SplitMix64).
#[derive(Clone, Default)]
pub struct SeededRng {
    state: Arc<AtomicU64>,
}

impl SeededRng {
    /// Restarts the stream from `seed`.
    pub fn seed(&self, seed: u64) {
        self.state.store(seed, Ordering::Relaxed);
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
        Ok(self.next() as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(self.next())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
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
/// randomness from `rng` and an insecure seed of `seed` (both set from the
/// snapshot before each call) of at most `MAX_RANDOM_BYTES` a call, no sockets, no files, no environment.
pub fn context(sink: &LogSink, rng: &SeededRng, seed: u64) -> WasiCtx {
    WasiCtxBuilder::new()
        .stdout(sink.clone())
        .stderr(sink.clone())
        .wall_clock(FrozenWall)
        .monotonic_clock(FrozenMono)
        .secure_random(rng.clone())
        .insecure_random(rng.clone())
        .insecure_random_seed(seed as u128)
        .max_random_size(super::limits::MAX_RANDOM_BYTES)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build()
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
}
