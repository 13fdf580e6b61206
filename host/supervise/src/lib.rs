//! What one run needs, and nothing more: the per-run supervisor
//! (`nightjar-supervise RUN_DIR`) and the run folder's files it shares with
//! the daemon. A supervisor is exec'd once per run, so this crate links no
//! wasmtime, SQLite, HTTP, TLS or async runtime; the daemon (`nightjar`)
//! links it too and re-exports its modules as `nightjar::sandbox` and
//! `nightjar::sys`.

pub mod cgroup;
pub mod classify;
pub mod container;
pub mod files;
pub mod identity;
pub mod lock;
pub use nightjar_core::runlog as logs;
pub mod paths;
pub mod report;
mod spawn;
pub mod supervisor;
pub mod sys;
pub use nightjar_core::{task, time};

/// `nightjar-supervise RUN_DIR`: runs the supervisor and turns its error
/// into an exit status (2: usage, 1: the run could not be supervised).
pub fn run_from_args() -> std::process::ExitCode {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: nightjar-supervise RUN_DIR (started by the nightjar daemon)");
        return std::process::ExitCode::from(2);
    };
    match supervisor::main(std::path::Path::new(&dir)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nightjar-supervise: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
