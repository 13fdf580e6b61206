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

/// `nightjar-supervise RUN_DIR [SPEC_LINE]`: runs the supervisor and turns
/// its error into an exit status (2: usage, 1: the run could not be
/// supervised).
pub fn run_from_args() -> std::process::ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(dir), line, None) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: nightjar-supervise RUN_DIR [SPEC_LINE] (started by the nightjar daemon)");
        return std::process::ExitCode::from(2);
    };
    let Some(line) = supervisor::spec_line(line.as_deref()) else {
        eprintln!("nightjar-supervise: SPEC_LINE must be a line number (0 is the first)");
        return std::process::ExitCode::from(2);
    };
    match supervisor::main(std::path::Path::new(&dir), line) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nightjar-supervise: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
