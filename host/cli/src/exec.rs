//! `nightjar daemon`, `plugins check` and `plugins test` need the plugin
//! host, which this binary does not link: they replace this process with
//! `nightjard` and the same arguments.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// Set in the environment of the `nightjard` this client runs: a client
/// that finds it set was itself run as `nightjard` (a link or copy of
/// `nightjar` under that name, a wrapper script calling `nightjar daemon`),
/// and running `nightjard` again would replace the process with itself for
/// ever.
const VIA_CLIENT: &str = "NIGHTJAR_VIA_CLIENT";

/// `nightjard` next to this binary (as `cargo install` and the release
/// archive place them), else the first one in an absolute `PATH` entry. Only
/// an executable file counts (as `execvp` steps over others), and an empty
/// or relative `PATH` entry is skipped: it would run whatever `nightjard`
/// the working directory holds (Go's `exec.LookPath` refuses the same).
pub fn nightjard_path() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name("nightjard"))
        .filter(|p| runnable(p));
    beside.or_else(|| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .filter(|d| d.is_absolute())
                .map(|d| d.join("nightjard"))
                .find(|p| runnable(p))
        })
    })
}

/// A file this user may execute.
fn runnable(p: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path for the call.
    p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}

/// Replaces this process with `nightjard ARGS`; returns only on failure.
pub fn nightjard() -> Result<i32> {
    if std::env::var_os(VIA_CLIENT).is_some_and(|v| v == OsStr::new("1")) {
        bail!(
            "`nightjard` ran this client again instead of the daemon: the `nightjard` next to this `nightjar` or on PATH is a link, copy or wrapper of `nightjar`; install the real one (`cargo install --path host`)"
        );
    }
    let Some(path) = nightjard_path() else {
        bail!(
            "`nightjard` (the daemon binary) is neither next to this `nightjar` nor in an absolute PATH entry, or is not executable; install both (`cargo install --path host`)"
        );
    };
    let err = std::process::Command::new(&path)
        .args(std::env::args_os().skip(1))
        .env(VIA_CLIENT, "1")
        .exec();
    bail!("cannot run {}: {err}", path.display())
}
