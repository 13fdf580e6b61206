//! The heap allocator of the static (musl) builds of `nightjar` and
//! `nightjar-supervise` (host/static), which each binary installs with
//! `#[global_allocator]`.
//!
//! musl's malloc (mallocng) hands most freed memory back to the kernel at
//! once, so a client building its command line (clap allocates and grows
//! thousands of small vectors) spends its start in `mmap`/`munmap` and
//! TLB flushes: measured with `perf`, two thirds of `nightjar --version`'s
//! CPU was the allocator. dlmalloc (a pure Rust port of Doug Lea's
//! allocator, as Rust's own wasm targets use) keeps freed chunks for
//! reuse; `nightjar --version` went from 0.87 to 0.43-0.52 ms of CPU
//! (`docs/src/internals/benchmarks.md`). The glibc builds (the daemon, the
//! tests) keep glibc's malloc.

pub use dlmalloc::GlobalDlmalloc as Allocator;

/// Makes a `fork` from another thread safe for the allocator: its lock is
/// taken around the fork, so a child never starts with it held. Call once,
/// first thing in `main`.
pub fn protect_fork() {
    // SAFETY: registers pthread_atfork handlers once (dlmalloc keeps a
    // flag); called from `main` before any other thread exists.
    unsafe { dlmalloc::enable_alloc_after_fork() }
}
