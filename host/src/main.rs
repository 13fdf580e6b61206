//! The `nightjar` binary: the client. It links only `nightjar-cli` (no
//! wasmtime, no SQLite), so each call starts fast; `nightjard` is the daemon.

fn main() {
    std::process::exit(nightjar_cli::main());
}
