//! `nightjar`, the client, as the package ships it (static, musl): the same
//! `nightjar-cli` code as the glibc build `host/src/main.rs`, with the
//! allocator of `nightjar_core::alloc` instead of musl's.

#[global_allocator]
static ALLOC: nightjar_core::alloc::Allocator = nightjar_core::alloc::Allocator;

fn main() {
    nightjar_core::alloc::protect_fork();
    std::process::exit(nightjar_cli::main());
}
