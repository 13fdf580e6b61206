//! The daemon's heap (glibc's malloc), set for a process that lives for
//! months with a queue that grows and shrinks: measured with 10,000 tasks
//! waiting (`scripts/bench rss`), glibc's defaults kept about 12 MiB that
//! the daemon had freed:
//! - its mmap threshold rises to the largest block freed so far (up to
//!   32 MiB), after which a pass's large temporary tables come from the
//!   heap and stay there once freed; fixed at 128 KiB, they are mapped and
//!   given back when freed, and the heap's top is trimmed past 128 KiB;
//! - each busy thread gets an arena of its own (up to eight per core), each
//!   keeping what it freed; two arenas serve the daemon's threads.
//!
//! A parameter set in the environment (`MALLOC_ARENA_MAX`,
//! `MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`) is left as it says.

/// Sets the heap's parameters; called once, before the daemon's threads start.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for (env, param, value) in [
        ("MALLOC_MMAP_THRESHOLD_", libc::M_MMAP_THRESHOLD, 128 << 10),
        ("MALLOC_TRIM_THRESHOLD_", libc::M_TRIM_THRESHOLD, 128 << 10),
        ("MALLOC_ARENA_MAX", libc::M_ARENA_MAX, 2),
    ] {
        if std::env::var_os(env).is_none() {
            // SAFETY: mallopt only sets one of malloc's parameters (it takes
            // malloc's own lock); nothing is handed to it but two integers.
            unsafe { libc::mallopt(param, value) };
        }
    }
}
