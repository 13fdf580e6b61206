//! The daemon's heap (glibc's malloc), set for a process that lives for
//! months with a queue that grows and shrinks: measured with 10,000 tasks
//! waiting (`scripts/bench rss`), glibc's defaults kept about 15 MiB that
//! the daemon had freed:
//! - its mmap threshold rises to the largest block freed so far (up to
//!   32 MiB), after which a pass's large temporary tables come from the
//!   heap and stay there once freed; fixed at 128 KiB, they are mapped and
//!   given back when freed, and the heap's top is trimmed past 128 KiB;
//! - each busy thread gets an arena of its own (up to eight per core), each
//!   keeping what it freed; two arenas serve the daemon's threads.
//!
//! A parameter set in the environment, by its `MALLOC_*` variable
//! (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`)
//! or by its tunable in `GLIBC_TUNABLES` (`glibc.malloc.arena_max`,
//! `glibc.malloc.mmap_threshold`, `glibc.malloc.trim_threshold`), is left
//! as it says: glibc read it at start, and `mallopt` would override it.

use std::ffi::OsString;

/// Each parameter set here: its `MALLOC_*` variable, its tunable, the
/// `mallopt` parameter (Linux with glibc only) and the value.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const PARAMS: [(&str, &str, libc::c_int, libc::c_int); 3] = [
    (
        "MALLOC_MMAP_THRESHOLD_",
        "glibc.malloc.mmap_threshold",
        libc::M_MMAP_THRESHOLD,
        128 << 10,
    ),
    (
        "MALLOC_TRIM_THRESHOLD_",
        "glibc.malloc.trim_threshold",
        libc::M_TRIM_THRESHOLD,
        128 << 10,
    ),
    (
        "MALLOC_ARENA_MAX",
        "glibc.malloc.arena_max",
        libc::M_ARENA_MAX,
        2,
    ),
];

/// Sets the heap's parameters; called once, before the daemon's threads start.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for (env, tunable, param, value) in PARAMS {
        if !set_outside(env, tunable, |k| std::env::var_os(k)) {
            // SAFETY: mallopt only sets one of malloc's parameters (it takes
            // malloc's own lock); nothing is handed to it but two integers.
            unsafe { libc::mallopt(param, value) };
        }
    }
}

/// Whether the environment (read through `var`) sets a parameter: its
/// variable `env` is there, or `GLIBC_TUNABLES` (`name=value` pairs,
/// colon-separated) names `tunable`.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
fn set_outside(env: &str, tunable: &str, var: impl Fn(&str) -> Option<OsString>) -> bool {
    if var(env).is_some() {
        return true;
    }
    let Some(tunables) = var("GLIBC_TUNABLES") else {
        return false;
    };
    tunables.to_string_lossy().split(':').any(|pair| {
        pair.split_once('=')
            .is_some_and(|(name, _)| name == tunable)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn a_parameter_set_by_its_variable_or_its_tunable_is_left_alone() {
        let arena =
            |e: &[(&str, &str)]| set_outside("MALLOC_ARENA_MAX", "glibc.malloc.arena_max", env(e));
        assert!(!arena(&[]), "nothing set: nightjard sets it");
        assert!(arena(&[("MALLOC_ARENA_MAX", "8")]));
        assert!(arena(&[("GLIBC_TUNABLES", "glibc.malloc.arena_max=8")]));
        assert!(arena(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=4"
        )]));
        // Another tunable, even one whose name begins the same, is not it.
        assert!(!arena(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.arena_test=4:glibc.malloc.arena_max_x=1:glibc.malloc.arena_max"
        )]));
    }
}
