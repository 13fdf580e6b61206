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
    run_with(std::env::args_os().skip(1))
}

/// How the supervisor is called; an argument that starts with `-` is never a run
/// folder (`nightjar-supervise --version` must not make one).
const USAGE: &str =
    "usage: nightjar-supervise RUN_DIR [SPEC_LINE] (started by the nightjar daemon)";

/// [`run_from_args`] over `args` (without the program's name).
pub fn run_with(mut args: impl Iterator<Item = std::ffi::OsString>) -> std::process::ExitCode {
    let (Some(dir), line, None) = (args.next(), args.next(), args.next()) else {
        eprintln!("{USAGE}");
        return std::process::ExitCode::from(2);
    };
    match dir.to_str() {
        Some("--version" | "-V") => {
            println!("nightjar-supervise {}", env!("CARGO_PKG_VERSION"));
            return std::process::ExitCode::SUCCESS;
        }
        Some("--help" | "-h") => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Some(option) if option.starts_with('-') => {
            eprintln!("nightjar-supervise: unknown option {option}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
        _ => {}
    }
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

#[cfg(test)]
mod args_tests {
    use super::*;
    use std::process::ExitCode;

    fn run(args: &[&str]) -> ExitCode {
        run_with(args.iter().map(std::ffi::OsString::from))
    }

    #[test]
    fn options_are_answered_or_refused_and_never_taken_for_a_run_folder() {
        let here = std::env::current_dir().unwrap();
        for (args, want) in [
            (&["--version"][..], ExitCode::SUCCESS),
            (&["-V"], ExitCode::SUCCESS),
            (&["--help"], ExitCode::SUCCESS),
            (&["-h"], ExitCode::SUCCESS),
            (&["--bogus"], ExitCode::from(2)),
            (&[], ExitCode::from(2)),
            (&["a", "b", "c"], ExitCode::from(2)),
        ] {
            assert_eq!(run(args), want, "{args:?}");
        }
        for name in ["--version", "-V", "--help", "-h", "--bogus"] {
            assert!(!here.join(name).exists(), "{name} made a folder");
        }
    }
}
