//! The command line as clap reads it: the global flags, every verb and
//! its arguments (each verb's own in its file), and the environment
//! variables that stand for flags.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// nightjar: queue experiments in the evening, read the results in the morning.
#[derive(Debug, Parser)]
#[command(name = "nightjar", version, propagate_version = true)]
pub struct Cli {
    /// Config file (TOML); defaults are built in.
    #[arg(long, global = true, env = "NIGHTJAR_CONFIG")]
    pub config: Option<PathBuf>,
    /// State dir (database, run folders, socket); overrides the config.
    #[arg(long, global = true, env = "NIGHTJAR_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// The verb.
    #[command(subcommand)]
    pub verb: Verb,
}

/// What `nightjar daemon` does besides running the daemon. Both run with
/// the daemon stopped or running (`check`) or stopped (`recover`), offline.
#[derive(Debug, Subcommand)]
pub enum DaemonCmd {
    /// Check the database file and whether it agrees with the state dir
    /// (run folders, live supervisors, the ids copy); exit 0 when sound, 1
    /// with what is wrong.
    Check {
        /// SQLite's full `integrity_check` (indexes too; slower) instead of `quick_check`.
        #[arg(long)]
        full: bool,
    },
    /// With the daemon stopped: move a damaged database aside, adopt what
    /// the run folders prove (live supervisors, finished and started runs,
    /// their tasks' specs), raise the issued ids past every id seen, and
    /// say what could not be recovered.
    Recover,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Run the daemon in the foreground (runs `nightjard`; systemd runs `nightjard` itself);
    /// `daemon check` and `daemon recover` look at and mend its state dir.
    Daemon {
        /// What to do instead of running the daemon.
        #[command(subcommand)]
        action: Option<DaemonCmd>,
    },
    /// Queue a task file, or a command: `nightjar submit [FLAGS] -- CMD ARGS`.
    Submit(Box<crate::submit::Args>),
    /// List tasks (sweeps as one line with counts).
    Ls(crate::ls::Args),
    /// Everything about one task: spec, dependencies, runs, events.
    Show {
        /// Task id.
        id: i64,
        /// Print its reproducibility manifests instead: what was asked at
        /// submit and what each run ran (command, env, git, inputs, Python, GPUs).
        #[arg(long)]
        manifest: bool,
    },
    /// Queue a task again from one of its runs: same command, workdir, env;
    /// inputs checked against that run's hashes.
    Rerun(crate::rerun::Args),
    /// What differs between two runs: code, command, env, inputs, Python,
    /// GPUs, system, policies, outputs (exit status 0 either way).
    Diff {
        /// The first run's id.
        a: i64,
        /// The second run's id.
        b: i64,
    },
    /// Print a task's output (`-f` follows a live run).
    Logs(crate::logs::Args),
    /// Cancel tasks: waiting ones at once, running ones by SIGTERM -> grace -> SIGKILL.
    Cancel {
        /// Task ids (a sweep id cancels every member).
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Keep waiting tasks from starting.
    Hold {
        /// Task ids.
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Let held tasks start again.
    Release {
        /// Task ids.
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Queue failed, cancelled or blocked tasks again (fresh attempt budget).
    Retry {
        /// Task ids.
        #[arg(required = true)]
        ids: Vec<i64>,
        /// Run for real, not from the result cache (also queues a task
        /// that succeeded from the cache again).
        #[arg(long)]
        no_cache: bool,
    },
    /// Wait until tasks end; the exit status mirrors their outcome.
    ///
    /// On a terminal, one live line on stderr shows how many have ended,
    /// failed, run and wait, the time since the wait began, and when the
    /// last is expected to end (from the tasks' estimates, as `nightjar
    /// estimate` forecasts them; "unknown" where one has none). Nothing of
    /// it on a pipe or with `--json`.
    Wait {
        /// Task ids (a sweep's id waits for all its members).
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Why a task waits, or where and why it started (policy verdicts, scores).
    Why {
        /// Task id.
        id: i64,
    },
    /// When waiting tasks are expected to start and end, on which GPUs, and
    /// what their energy will cost: the live queue simulated forward from
    /// now (running runs end at their estimates; the chain, tariff and
    /// backfill as the daemon runs them). No id: every waiting task.
    Estimate {
        /// Task ids.
        ids: Vec<i64>,
    },
    /// Every GPU: utilisation, memory used/reserved/free, temperature, power, health, tasks.
    Gpus(crate::gpus::Args),
    /// Plugins: `ls` (the daemon's chain), `reload`, `check FILE`, `test FILE
    /// --snapshot S.json`, `new NAME --kind policy|notifier|validator`.
    #[command(subcommand)]
    Plugins(crate::plugins::Cmd),
    /// Notifications: `ls` (pending, retrying, dead), `retry ID`, `test NAME`.
    #[command(subcommand)]
    Notify(crate::notify::Cmd),
    /// What the runs that ended in a period did, used and cost, by project
    /// (or task name): runs, outcomes, GPU-hours, waits, energy, cost and
    /// what waiting for cheaper hours saved.
    Report(crate::report::Args),
    /// Replay a trace (CSV of jobs) through the scheduler on a virtual clock:
    /// the configured policy chain, placement and backfill, no daemon, no
    /// processes; prints waits, completion times, makespan, utilisation, use
    /// by project and user, and energy and cost at the tariff (runs `nightjard`).
    Simulate(crate::simulate::Args),
    /// Print the socket protocol's JSON Schema (every request and each
    /// verb's reply, from the daemon's own types), for clients in other
    /// languages (runs `nightjard`).
    ProtocolSchema,
    /// Change a task's priority (administrators; written to the audit log).
    Priority {
        /// Task id (a sweep's id changes its waiting members too).
        id: i64,
        /// low, normal, high or urgent.
        level: nightjar_core::task::model::Priority,
    },
    /// The audit log: priorities changed, others' tasks cancelled, held or
    /// retried, plugin reloads, collections, tokens.
    Audit {
        /// Only entries since this long ago (`7d`, `12h`).
        #[arg(long, value_parser = humantime::parse_duration)]
        since: Option<std::time::Duration>,
        /// At most this many, the newest.
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Who the daemon takes you for (from the socket's credentials), and whether you administer it.
    Whoami,
    /// API tokens for the HTTP API and dashboard: `create [--name N]`, `ls`, `revoke ID`.
    #[command(subcommand)]
    Token(crate::token::Cmd),
    /// Delete ended tasks older than `[retention]` keeps them, with their runs, events and folders.
    Gc {
        /// Only say what would be deleted.
        #[arg(long)]
        dry_run: bool,
    },
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

impl Cli {
    /// Parses the command line. `NIGHTJAR_CONFIG=`, `NIGHTJAR_STATE_DIR=`
    /// (or the socket or SDK variable)
    /// set but empty (a cleared variable in a script) count as unset, as
    /// an empty `PATH` entry would, not as a flag missing its value.
    pub fn parse_args() -> Cli {
        Cli::parse_from_args(std::env::args_os())
    }

    /// [`Cli::parse_args`] of these arguments (the program name first).
    pub fn parse_from_args<I, T>(args: I) -> Cli
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        for var in [
            "NIGHTJAR_CONFIG",
            "NIGHTJAR_STATE_DIR",
            "NIGHTJAR_SOCKET",
            "NIGHTJAR_SDK",
        ] {
            if std::env::var_os(var).is_some_and(|v| v.is_empty()) {
                // SAFETY: called first thing in main, before any other thread
                // exists that could read the environment.
                unsafe { std::env::remove_var(var) };
            }
        }
        Cli::parse_from(args)
    }
}
