//! `nightjar daemon`, `plugins check` and `plugins test` need the plugin
//! host, which this binary does not link: they replace this process with
//! `nightjard` and the same arguments.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use anyhow::{Result, bail};

/// `nightjard` next to this binary (as `cargo install` and the release
/// archive place them), else the first one on `PATH`.
pub fn nightjard_path() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name("nightjard"))
        .filter(|p| p.is_file());
    beside.or_else(|| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("nightjard"))
                .find(|p| p.is_file())
        })
    })
}

/// Replaces this process with `nightjard ARGS`; returns only on failure.
pub fn nightjard() -> Result<i32> {
    let Some(path) = nightjard_path() else {
        bail!(
            "`nightjard` (the daemon binary) is neither next to this `nightjar` nor on PATH; install both (`cargo install --path host`)"
        );
    };
    let err = std::process::Command::new(&path)
        .args(std::env::args_os().skip(1))
        .exec();
    bail!("cannot run {}: {err}", path.display())
}
