//! A policy that misbehaves the way its config says, so the host's tests can
//! pin what happens to each kind of hostile plugin. The config is one word,
//! bare or as `mode = "word"`:
//!
//! - `loop`: `evaluate` never returns
//! - `alloc`: `evaluate` allocates 4 GiB (in 1 MiB pieces)
//! - `recurse`: `evaluate` recurses without end
//! - `panic`: `evaluate` panics
//! - `huge`: `evaluate` answers ten million verdicts
//! - `unknown-task`: a verdict for a task that is not queued
//! - `unknown-gpu`: closes a GPU that does not exist
//! - `reject-config`: `configure` refuses its config
//! - `hang-config`: `configure` never returns
//! - `print`: prints 5,000 lines, then answers like `ok`
//! - `sleep`: `evaluate` sleeps 120 s (a WASI clock subscription)
//! - `sleep-forever`: `evaluate` sleeps as long as a `Duration` can say
//! - `sleep-config`: `configure` sleeps 120 s
//! - `preempt-huge`: preempts every running task with a 50 MB reason
//! - `preempt-all`: preempts every running task, every pass
//! - `spam`: logs 100 messages of 1 KiB and prints 8 KiB each call, and
//!   defers every task (but those of project `free`) with `until = now`
//! - `until-now`, `until-past`, `until-min`: defers every task (but those of
//!   project `free`) until `now`, `-1` or `i64::MIN`
//! - `close-gpu`: closes GPU 0
//! - `flaky`: traps on every second call
//! - `random`: scores every task with a value drawn from WASI randomness
//!   (a `RandomState`, whose keys the plugin draws once and then steps)
//! - `random-bytes`: scores every task with 3 bytes drawn from
//!   `wasi:random` in this call; traps after drawing them when a task of
//!   project `trap` is queued
//! - `random-forgets`: as `random-bytes`, but a change from a snapshot it
//!   was sent before draws 3 bytes and answers that it holds nothing
//! - `churn`: defers every task (but those of project `free`) with a 4,000
//!   character reason whose letters change every call, `until = now`
//! - `alias`: answers 64 deferrals whose reasons (64 entries of the
//!   answer's reason table) all point at one 16 MiB string (1 GiB for the
//!   host to copy, 16 MiB in the plugin)
//! - `config-huge`: `configure` refuses its config with a 32 MiB message
//! - `log-forge`: logs a message with a newline, a forged log line and an
//!   ANSI escape
//! - `random-huge`: asks `wasi:random` for 32 MiB at a time, 1,000 times
//! - `bad-task-index`, `bad-reason-index`, `bad-running-index`: an answer
//!   naming a queue position, reason or running position that is not there
//!   (written on the contract's own types, past the SDK)
//! - `reasons-huge`: one verdict and a reason table of a million strings
//! - `lie-zero`, `lie-base`, `lie-next`: answers as `ok` does, for the
//!   generation it was sent on the first call; then `lie-zero` answers 0 on
//!   every call, `lie-base` the change's base, and `lie-next` a generation
//!   it was never sent on every second call
//! - `ok` (or empty): defers every task whose project is `held-by-plugin`
//!
//! The modes that break the answer's form are written on the contract's own
//! types by this plugin's export glue; every other mode goes through the
//! SDK's [`Policy`] trait.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nightjar_sdk::abi;
use nightjar_sdk::*;

static CALLS: AtomicU64 = AtomicU64::new(0);

#[inline(never)]
fn recurse(n: u64) -> u64 {
    if n == u64::MAX {
        0
    } else {
        recurse(n + 1).wrapping_add(std::hint::black_box(n))
    }
}

#[link(wasm_import_module = "wasi:random/random@0.2.4")]
unsafe extern "C" {
    /// `get-random-bytes: func(len: u64) -> list<u8>`, by hand: the list's
    /// pointer and length are written at `ret`.
    #[link_name = "get-random-bytes"]
    fn wasi_get_random_bytes(len: i64, ret: *mut usize);
}

/// `len` random bytes straight from the host.
fn random_bytes(len: i64) -> Vec<u8> {
    let mut ret = [0usize; 2];
    // SAFETY: `ret` has room for the pointer and length the import writes;
    // the list was allocated by this module's `cabi_realloc` with align 1.
    unsafe {
        wasi_get_random_bytes(len, ret.as_mut_ptr());
        Vec::from_raw_parts(ret[0] as *mut u8, ret[1], ret[1])
    }
}

/// `len` random bytes straight from the host, dropped at once.
fn raw_random(len: i64) -> usize {
    random_bytes(len).len()
}

struct Hostile;

impl Policy for Hostile {
    /// The mode.
    type Config = String;

    /// Not TOML: `mode = "loop"` (as the daemon passes
    /// `[plugin.hostile.config]`) or a bare word.
    fn parse(config: &str) -> Result<String, ConfigError> {
        let m = mode_of(config);
        match m.as_str() {
            "reject-config" => {
                return Err(ConfigError {
                    key: Some("mode".into()),
                    message: "this plugin refuses every config".into(),
                });
            }
            "hang-config" => loop {
                std::hint::black_box(0);
            },
            "sleep-config" => std::thread::sleep(Duration::from_secs(120)),
            "config-huge" => {
                return Err(ConfigError {
                    key: Some("mode".into()),
                    message: "c".repeat(32 << 20),
                });
            }
            _ => {}
        }
        Ok(m)
    }

    fn evaluate(mode: &String, s: &Snapshot) -> Evaluation {
        let mut e = Evaluation::default();
        match mode.as_str() {
            "loop" => loop {
                std::hint::black_box(0);
            },
            // The host's tariff for the next day: the number of spans as
            // the first task's score (-1: the host has no time-of-use tariff).
            "tariff" => {
                let n = nightjar_sdk::tariff::prices(s.now, s.now + 86_400_000)
                    .map_or(-1, |t| t.spans.len() as i32);
                e.allow(s.queue.first().map(|t| t.id).unwrap_or(0), n);
            }
            // Asks for all of time, again and again, keeping every answer.
            "tariff-flood" => {
                let mut kept = Vec::new();
                loop {
                    kept.push(nightjar_sdk::tariff::prices(i64::MIN, i64::MAX));
                    std::hint::black_box(&kept);
                }
            }
            "alloc" => {
                // 4 GiB in 1 MiB pieces (wasm32 cannot ask for 4 GiB at once).
                let mut held: Vec<Vec<u8>> = Vec::new();
                for _ in 0..4096 {
                    held.push(vec![1u8; 1 << 20]);
                }
                e.allow(
                    s.queue.first().map(|t| t.id).unwrap_or(0),
                    held.len() as i32,
                );
            }
            "recurse" => {
                e.allow(0, recurse(0) as i32);
            }
            "panic" => panic!("hostile plugin panics on purpose"),
            "huge" => {
                for i in 0..10_000_000 {
                    e.allow(i, 0);
                }
            }
            "unknown-task" => e.allow(987_654_321, 1),
            "unknown-gpu" => e.close_gpu(99, "no such GPU"),
            "print" => {
                for i in 0..5_000 {
                    println!("hostile plugin line {i}");
                }
            }
            "sleep" => std::thread::sleep(Duration::from_secs(120)),
            "sleep-forever" => std::thread::sleep(Duration::MAX),
            "preempt-huge" => {
                let reason = "x".repeat(50 << 20);
                for t in &s.running {
                    e.preempt(t.id, reason.clone());
                }
            }
            "preempt-all" => {
                for t in &s.running {
                    e.preempt(t.id, "preempt everything, every pass");
                }
            }
            "spam" => {
                let line = "s".repeat(1024);
                for _ in 0..100 {
                    log(Level::Warn, &line);
                }
                println!("{}", "p".repeat(8 * 1024));
                for t in s.queue.iter().filter(|t| t.project != "free") {
                    e.defer(t.id, "spam: ask again now", Some(s.now));
                }
            }
            "until-now" | "until-past" | "until-min" => {
                let until = match mode.as_str() {
                    "until-now" => s.now,
                    "until-past" => -1,
                    _ => i64::MIN,
                };
                for t in s.queue.iter().filter(|t| t.project != "free") {
                    e.defer(t.id, "asks to be asked again at once", Some(until));
                }
            }
            "churn" => {
                let call = CALLS.fetch_add(1, Ordering::Relaxed);
                let letter = (b'a' + (call % 26) as u8) as char;
                let reason: String = std::iter::repeat_n(letter, 4000).collect();
                for t in s.queue.iter().filter(|t| t.project != "free") {
                    e.defer(t.id, reason.clone(), Some(s.now));
                }
            }
            "random-huge" => {
                let mut got = 0;
                for _ in 0..1000 {
                    got += raw_random(32 << 20);
                }
                e.allow(s.queue.first().map(|t| t.id).unwrap_or(0), got as i32);
            }
            "log-forge" => log(
                Level::Info,
                "innocent\n2030-01-01T00:00:00Z  INFO nightjar: task 1 finished ok\x1b[2J",
            ),
            "close-gpu" => e.close_gpu(0, "closed by the hostile test plugin"),
            "flaky" if CALLS.fetch_add(1, Ordering::Relaxed) % 2 == 1 => {
                panic!("hostile plugin fails every second call")
            }
            "random-bytes" | "random-forgets" => {
                let b = random_bytes(3);
                let drawn = i32::from_le_bytes([b[0], b[1], b[2], 0]);
                if s.queue.iter().any(|t| t.project == "trap") {
                    panic!("hostile plugin traps after drawing randomness");
                }
                for t in &s.queue {
                    e.allow(t.id, drawn);
                }
            }
            "random" => {
                let draw = std::collections::hash_map::RandomState::new().hash_one(7u64);
                for t in &s.queue {
                    e.allow(t.id, (draw % 1_000_000) as i32);
                }
            }
            _ => {}
        }
        for t in &s.queue {
            if t.project == "held-by-plugin" {
                e.defer(t.id, "held by the hostile test plugin", None);
            }
        }
        e
    }
}

/// The mode a config names: `mode = "word"` or a bare word.
fn mode_of(config: &str) -> String {
    config
        .split('"')
        .nth(1)
        .unwrap_or(config.trim())
        .to_string()
}

/// The modes whose answers break the contract's form.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
const RAW: [&str; 5] = [
    "bad-task-index",
    "bad-reason-index",
    "bad-running-index",
    "reasons-huge",
    "alias",
];

/// The modes whose answers are right but name another generation.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
const LIES: [&str; 3] = ["lie-zero", "lie-base", "lie-next"];

/// The generation a mode of [`LIES`] answers on call `call` (from 0) of a
/// change from `base` to `generation`.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn lie(mode: &str, call: u64, base: u64, generation: u64) -> u64 {
    match mode {
        _ if call == 0 => generation,
        "lie-zero" => 0,
        "lie-base" => base,
        _ if call % 2 == 1 => generation.wrapping_add(1_000_000),
        _ => generation,
    }
}

/// The answer of a mode of [`RAW`], written on the contract's own types for
/// a snapshot of `queued` and `running` tasks, as the answer for
/// `generation`.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn raw(mode: &str, queued: usize, running: usize, generation: u64) -> abi::Evaluation {
    let mut e = nightjar_sdk::__private::not_held();
    e.generation = generation;
    e.reasons = vec!["hostile".into()];
    let mut defer = |task: u32, reason: u32| {
        e.deferred.task.push(task);
        e.deferred.reason.push(reason);
        e.deferred.until.push(0);
    };
    match mode {
        "bad-task-index" => defer(queued as u32, 0),
        "bad-reason-index" => defer(0, 5),
        "bad-running-index" => e.preempt.push(abi::Preemption {
            task: running as u32 + 3,
            reason: 0,
        }),
        "reasons-huge" => {
            defer(0, 0);
            e.reasons.resize(1_000_000, String::new());
        }
        _ => {
            // `alias`: one 16 MiB string, 64 reasons that all point at it:
            // the plugin holds 16 MiB, a host that copies each holds 1 GiB.
            for i in 0..64 {
                defer(i, i);
            }
            let big = std::mem::ManuallyDrop::new("a".repeat(16 << 20));
            e.reasons = (0..64)
                .map(|_| {
                    // SAFETY: the host reads the answer before the plugin
                    // frees it (then 64 times: a test plugin may trap there).
                    unsafe {
                        String::from_raw_parts(big.as_ptr() as *mut u8, big.len(), big.capacity())
                    }
                })
                .collect();
        }
    }
    e
}

nightjar_sdk::api_version_section!();

#[cfg(target_arch = "wasm32")]
mod export {
    use std::sync::Mutex;

    use nightjar_sdk::__private::{ConfigSlot, configure_into, evaluate_abi, not_held, with_kept};
    use nightjar_sdk::{ConfigError, abi};

    static CONFIG: ConfigSlot<String> = ConfigSlot::new();
    static MODE: Mutex<String> = Mutex::new(String::new());

    struct Export;

    impl abi::Guest for Export {
        fn configure(text: String) -> Result<(), ConfigError> {
            configure_into::<super::Hostile>(&CONFIG, &text)?;
            *MODE.lock().unwrap_or_else(|p| p.into_inner()) = super::mode_of(&text);
            Ok(())
        }

        fn evaluate(change: abi::Snapshot) -> abi::Evaluation {
            let mode = MODE.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if mode == "random-forgets" && change.base != 0 {
                // Draws, then forgets: the host sends the whole snapshot again.
                super::random_bytes(3);
                return not_held();
            }
            if super::LIES.contains(&mode.as_str()) {
                let call = super::CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (base, generation) = (change.base, change.generation);
                let mut e = evaluate_abi::<super::Hostile>(&CONFIG, change);
                if e.generation != 0 {
                    e.generation = super::lie(&mode, call, base, generation);
                }
                return e;
            }
            if !super::RAW.contains(&mode.as_str()) {
                return evaluate_abi::<super::Hostile>(&CONFIG, change);
            }
            with_kept(change, |s, generation| {
                super::raw(&mode, s.queue.len(), s.running.len(), generation)
            })
            .unwrap_or_else(not_held)
        }
    }

    nightjar_sdk::bindings::__export_scheduling_policy!(Export with_types_in nightjar_sdk::bindings);
}
