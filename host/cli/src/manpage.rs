//! The command line of `nightjard` as a clap `Command`, for its man page:
//! the client's global flags and the verbs the daemon binary runs
//! (`daemon`, `plugins check`, `plugins test`), taken from [`Cli`] so the
//! two never differ.

use clap::{Command, CommandFactory};

use super::Cli;

/// What the daemon's page says about files and units.
const DAEMON_FILES: &str = "\
Files: /etc/nightjar/nightjar.toml is the package's config (every key at its
default), which the system unit passes with --config.

/var/lib/nightjar holds the state of a daemon run as root (database, run
folders, plugins/); /run/nightjar/nightjar.sock is its socket, where every
user's `nightjar` finds it.

~/.local/state/nightjar (or $XDG_STATE_HOME/nightjar) holds the state of a
user's own daemon; $XDG_RUNTIME_DIR/nightjar.sock is its socket.

/usr/share/doc/nightjar/examples has a lab's config, task files and the units.

Units: `systemctl enable --now nightjar` (the lab-wide daemon, as root) or
`systemctl --user enable --now nightjar` (one user's own). SIGTERM stops
dispatching and leaves running tasks running; the next start adopts them.
SIGHUP reloads the plugin folder. NIGHTJAR_LOG sets the log filter (default info).";

/// `nightjard`: the global flags of `nightjar`, its `daemon` verb and its
/// offline `plugins check|test`.
pub fn daemon_command() -> Command {
    let full = Cli::command();
    let mut cmd = Command::new("nightjard")
        .version(env!("CARGO_PKG_VERSION"))
        .about("The nightjar daemon: the queue, the scheduler, the plugins, the GPUs")
        .long_about(
            "The nightjar daemon: keeps the queue in SQLite, starts each task when the policy \
             plugins allow, runs it under its own supervisor (nightjar-supervise), watches the \
             GPUs, judges and archives the results and sends the notifications. systemd runs \
             `nightjard daemon`; `nightjar daemon` runs it in the foreground. Every other verb \
             is the client's: see nightjar(1).",
        )
        .after_long_help(DAEMON_FILES)
        .subcommand_required(true)
        .disable_help_subcommand(true);
    for a in full.get_arguments() {
        cmd = cmd.arg(a.clone());
    }
    if let Some(d) = full.find_subcommand("daemon") {
        cmd = cmd.subcommand(d.clone());
    }
    if let Some(p) = full.find_subcommand("plugins") {
        let mut plugins = Command::new("plugins")
            .about("Offline plugin checks: `check FILE`, `test FILE --snapshot S.json`")
            .subcommand_required(true);
        for s in p
            .get_subcommands()
            .filter(|s| matches!(s.get_name(), "check" | "test"))
        {
            plugins = plugins.subcommand(s.clone());
        }
        cmd = cmd.subcommand(plugins);
    }
    cmd
}

#[cfg(test)]
#[path = "manpage_tests.rs"]
mod tests;
