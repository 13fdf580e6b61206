//! The `nightjar` command line: one file per verb. Every verb talks to the
//! daemon over its socket through the typed protocol of `nightjar-core`;
//! `daemon`, `plugins check` and `plugins test` need the plugin host, so they
//! run `nightjard` (next to this binary, else on `PATH`) with the same
//! arguments. This crate links neither wasmtime nor SQLite: a client call
//! starts in about a millisecond.

mod admin;
mod control;
mod diff;
mod estimate;
mod exec;
mod gpus;
mod logs;
mod logs_escape;
mod ls;
mod manifest;
mod manpage;
mod notify;
/// `plugins new`: a plugin crate from the SDK.
pub mod plugin_new;
pub mod plugins;
pub mod reference;
mod report;
/// The report's files: `--html` written atomically, `--pdf` printed by Chromium.
pub mod report_files;
mod rerun;
mod show;
pub mod simulate;
mod submit;
pub mod table;
mod token;
mod wait;
mod wait_live;

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};

pub use manpage::daemon_command;
use nightjar_core::api::{self, ErrorKind};
use nightjar_core::client::{CallError, Client, NotRunning};

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
    Submit(Box<submit::Args>),
    /// List tasks (sweeps as one line with counts).
    Ls(ls::Args),
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
    Rerun(rerun::Args),
    /// What differs between two runs: code, command, env, inputs, Python,
    /// GPUs, system, policies, outputs (exit status 0 either way).
    Diff {
        /// The first run's id.
        a: i64,
        /// The second run's id.
        b: i64,
    },
    /// Print a task's output (`-f` follows a live run).
    Logs(logs::Args),
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
    Gpus(gpus::Args),
    /// Plugins: `ls` (the daemon's chain), `reload`, `check FILE`, `test FILE
    /// --snapshot S.json`, `new NAME --kind policy|notifier|validator`.
    #[command(subcommand)]
    Plugins(plugins::Cmd),
    /// Notifications: `ls` (pending, retrying, dead), `retry ID`, `test NAME`.
    #[command(subcommand)]
    Notify(notify::Cmd),
    /// What the runs that ended in a period did, used and cost, by project
    /// (or task name): runs, outcomes, GPU-hours, waits, energy, cost and
    /// what waiting for cheaper hours saved.
    Report(report::Args),
    /// Replay a trace (CSV of jobs) through the scheduler on a virtual clock:
    /// the configured policy chain, placement and backfill, no daemon, no
    /// processes; prints waits, completion times, makespan, utilisation, use
    /// by project and user, and energy and cost at the tariff (runs `nightjard`).
    Simulate(simulate::Args),
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
    Token(token::Cmd),
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

/// Runs the CLI and returns the process exit status (docs/src/guide/using.md#exit-statuses:
/// 0 done, 1 failed, 2 usage, 3 no daemon, 4 no such task, 5 protocol
/// mismatch, 6 not allowed (another user's task), 7 the daemon failed
/// inside (its store or file system); `wait` mirrors the tasks' own
/// outcome).
pub fn main() -> i32 {
    let cli = Cli::parse_args();
    // `nightjar show 4 | head -1`: the reader left, so end quietly as every
    // Unix tool does, instead of panicking in println!. (The client's
    // socket writes use MSG_NOSIGNAL.)
    // SAFETY: setting a signal's disposition to its default is always sound.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nightjar: {}", table::clean_text(&format!("{e:#}")));
            exit_status(&e)
        }
    }
}

/// The exit status of a failed verb, from the error's type.
pub fn exit_status(e: &anyhow::Error) -> i32 {
    if e.downcast_ref::<NotRunning>().is_some() {
        return ErrorKind::Unavailable.exit_status();
    }
    if let Some(c) = e.downcast_ref::<CallError>() {
        return c.kind().exit_status();
    }
    1
}

fn run(cli: Cli) -> Result<i32> {
    match &cli.verb {
        Verb::Completions { shell } => {
            clap_complete::generate(
                *shell,
                &mut Cli::command(),
                "nightjar",
                &mut std::io::stdout(),
            );
            return Ok(0);
        }
        Verb::Daemon { .. }
        | Verb::Simulate(_)
        | Verb::ProtocolSchema
        | Verb::Plugins(plugins::Cmd::Check { .. } | plugins::Cmd::Test { .. }) => {
            return exec::nightjard();
        }
        Verb::Plugins(plugins::Cmd::New(a)) => return plugin_new::run(a),
        _ => {}
    }
    // A period that ends before it starts is a usage error, said before
    // the daemon is asked anything.
    let period = match &cli.verb {
        Verb::Report(a) => match a.period(nightjar_core::time::now_ms()) {
            Ok(p) => Some(p),
            Err(e) => Cli::command()
                .error(clap::error::ErrorKind::ArgumentConflict, e)
                .exit(),
        },
        _ => None,
    };
    let ctx = Ctx {
        json: cli.json,
        client: connect(&cli)?,
    };
    match cli.verb {
        Verb::Submit(a) => submit::run(ctx, *a),
        Verb::Ls(a) => ls::run(ctx, a),
        Verb::Show { id, manifest } => show::run(ctx, id, manifest),
        Verb::Logs(a) => logs::run(ctx, a),
        Verb::Rerun(a) => rerun::run(ctx, a),
        Verb::Diff { a, b } => diff::run(ctx, a, b),
        Verb::Cancel { ids } => control::run(ctx, control::Action::Cancel, &ids),
        Verb::Hold { ids } => control::run(ctx, control::Action::Hold, &ids),
        Verb::Release { ids } => control::run(ctx, control::Action::Release, &ids),
        Verb::Retry { ids, no_cache } => {
            control::run(ctx, control::Action::Retry { no_cache }, &ids)
        }
        Verb::Wait { ids } => wait::run(ctx, &ids),
        Verb::Gpus(a) => gpus::run(ctx, a),
        Verb::Report(a) => report::run(ctx, a, period.unwrap_or_default()),
        Verb::Gc { dry_run } => {
            let mut ctx = ctx;
            let r = ctx.client.call(api::Gc { dry_run })?;
            if ctx.json {
                print_json(&r)?;
            } else {
                println!("{}", r.summary());
            }
            Ok(0)
        }
        Verb::Why { id } => {
            let mut ctx = ctx;
            let report = ctx.client.call(api::Why { id })?;
            if ctx.json {
                print_json(&report)?;
            } else {
                let now = nightjar_core::time::now_ms();
                report
                    .lines(now)
                    .iter()
                    .for_each(|l| println!("{}", table::clean(l)));
                if report.state == "queued"
                    && let Some(line) = estimate::expected_start(&mut ctx.client, id)
                {
                    println!("{}", table::clean(&line));
                }
            }
            Ok(0)
        }
        Verb::Estimate { ids } => estimate::run(ctx, ids),
        Verb::Priority { id, level } => admin::priority(ctx, id, level),
        Verb::Audit { since, limit } => {
            let since =
                since.map(|d| nightjar_core::time::now_ms() - nightjar_core::time::span_ms(d));
            admin::audit(ctx, since, limit)
        }
        Verb::Whoami => admin::whoami(ctx),
        Verb::Notify(cmd) => notify::run(ctx, cmd),
        Verb::Token(cmd) => token::run(ctx, cmd),
        Verb::Plugins(cmd) => {
            let mut ctx = ctx;
            match cmd {
                plugins::Cmd::Reload => plugins::reload(&mut ctx.client, ctx.json),
                _ => plugins::ls(&mut ctx.client, ctx.json),
            }
        }
        Verb::Daemon { .. }
        | Verb::Completions { .. }
        | Verb::Simulate(_)
        | Verb::ProtocolSchema => Ok(0),
    }
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

/// What every client verb gets.
pub struct Ctx {
    /// `--json` was given.
    pub json: bool,
    /// The connection.
    pub client: Client,
}

/// Connects to the daemon: the socket `NIGHTJAR_SOCKET` names; else the
/// one of `--config`/`--state-dir` or of the user's own default daemon;
/// with neither flag, when the user's own daemon is not there, the lab-wide
/// daemon's (a root daemon's default socket). The error names every place
/// looked at.
fn connect(cli: &Cli) -> Result<Client> {
    use nightjar_core::paths::{SOCKET_VAR, SYSTEM_SOCKET};
    if let Some(named) = std::env::var_os(SOCKET_VAR).filter(|v| !v.is_empty()) {
        let hint = format!(" (the socket named by {SOCKET_VAR})");
        return Ok(Client::connect(Path::new(&named), &hint)?);
    }
    let socket = nightjar_core::paths::socket_of(cli.config.as_deref(), cli.state_dir.as_deref())
        .map_err(anyhow::Error::msg)?;
    let mut hint = String::new();
    if let Some(c) = &cli.config {
        hint.push_str(&format!(" --config {}", c.display()));
    }
    if let Some(s) = &cli.state_dir {
        hint.push_str(&format!(" --state-dir {}", s.display()));
    }
    let own = match Client::connect(&socket, &hint) {
        Ok(c) => return Ok(c),
        Err(e) => e,
    };
    let system = Path::new(SYSTEM_SOCKET);
    let defaults = cli.config.is_none() && cli.state_dir.is_none();
    if !defaults || !own.cause.is_empty() || socket == system {
        return Err(own.into());
    }
    match Client::connect(system, "") {
        Ok(c) => Ok(c),
        Err(mut e) => {
            if e.cause.is_empty() {
                e.socket = socket;
                e.hint = hint;
                e.also = Some(system.to_path_buf());
            }
            Err(e.into())
        }
    }
}

/// Prints `value` as pretty JSON.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
