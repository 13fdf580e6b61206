//! `nightjar-supervise RUN_DIR`: the per-run supervisor. Its code is the
//! `nightjar-supervise` crate (host/supervise), which links no wasmtime,
//! SQLite, HTTP or TLS; this file only names it, so that building the
//! `nightjar` package (the daemon's tests, `scripts/package`) builds it too.
//! It names nothing of the `nightjar` library, so none of it is linked (an
//! end-to-end test looks into the binary). `nightjard supervise RUN_DIR` is
//! the same supervisor, used when this binary is missing.

fn main() -> std::process::ExitCode {
    nightjar_supervise::run_from_args()
}
