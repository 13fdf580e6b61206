//! `nightjar-supervise RUN_DIR`, as the package ships it (static, musl): the
//! same `nightjar-supervise` crate as the glibc build
//! `host/src/bin/nightjar-supervise.rs`, with the allocator of
//! `nightjar_core::alloc` instead of musl's.

#[global_allocator]
static ALLOC: nightjar_core::alloc::Allocator = nightjar_core::alloc::Allocator;

fn main() -> std::process::ExitCode {
    nightjar_core::alloc::protect_fork();
    nightjar_supervise::run_from_args()
}
