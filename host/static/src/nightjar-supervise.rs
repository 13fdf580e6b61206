//! `nightjar-supervise RUN_DIR`, as the package ships it (static, musl): the
//! same `nightjar-supervise` crate as the glibc build
//! `host/src/bin/nightjar-supervise.rs`.

fn main() -> std::process::ExitCode {
    nightjar_supervise::run_from_args()
}
