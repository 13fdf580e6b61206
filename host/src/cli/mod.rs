//! The command line: one file per verb. Every verb talks to the daemon over
//! its socket (except `daemon`, `completions` and the internal `supervise`).

mod control;
mod gpus;
mod logs;
mod ls;
mod plugins;
mod show;
mod submit;
mod table;
mod wait;

use std::path::PathBuf;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};

use crate::api::client::Client;
use crate::config::Config;

/// nightjar: queue experiments in the evening, read the results in the morning.
#[derive(Debug, Parser)]
#[command(name = "nightjar", version, about, propagate_version = true)]
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

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Run the daemon in the foreground (systemd runs it this way).
    Daemon,
    /// Queue a task file, or a command: `nightjar submit [FLAGS] -- CMD ARGS`.
    Submit(Box<submit::Args>),
    /// List tasks (sweeps as one line with counts).
    Ls(ls::Args),
    /// Everything about one task: spec, dependencies, runs, events.
    Show {
        /// Task id.
        id: i64,
    },
    /// Print a task's output (`-f` follows a live run).
    Logs(logs::Args),
    /// Cancel tasks: waiting ones at once, running ones by SIGTERM -> grace -> SIGKILL.
    Cancel {
        /// Task ids (an array id cancels every member).
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
    },
    /// Wait until tasks end; the exit status mirrors their outcome.
    Wait {
        /// Task ids.
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Why a task waits, or where and why it started (policy verdicts, scores).
    Why {
        /// Task id.
        id: i64,
    },
    /// Every GPU: utilisation, memory used/reserved/free, temperature, power, health, tasks.
    Gpus(gpus::Args),
    /// Policy plugins: `ls` (the daemon's chain), `check FILE`, `test FILE --snapshot S.json`.
    #[command(subcommand)]
    Plugins(plugins::Cmd),
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
    /// Internal: supervise one run (started by the daemon).
    #[command(hide = true)]
    Supervise {
        /// The run folder.
        dir: PathBuf,
    },
}

/// Runs the CLI and returns the process exit status.
pub fn main() -> i32 {
    let cli = Cli::parse();
    if !matches!(cli.verb, Verb::Daemon | Verb::Supervise { .. }) {
        // `nightjar show 4 | head -1`: the reader left, so end quietly as
        // every Unix tool does, instead of panicking in println!. (The
        // daemon keeps SIGPIPE ignored; the client's socket writes use
        // MSG_NOSIGNAL.)
        crate::sys::default_signal(libc::SIGPIPE);
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nightjar: {}", table::clean_text(&format!("{e:#}")));
            1
        }
    }
}

fn run(cli: Cli) -> Result<i32> {
    if let Verb::Supervise { dir } = &cli.verb {
        crate::sandbox::supervisor::main(dir)?;
        return Ok(0);
    }
    if let Verb::Completions { shell } = &cli.verb {
        clap_complete::generate(
            *shell,
            &mut Cli::command(),
            "nightjar",
            &mut std::io::stdout(),
        );
        return Ok(0);
    }
    match &cli.verb {
        Verb::Plugins(plugins::Cmd::Check { file, config }) => {
            let limits = plugins::daemon_limits(cli.config.as_deref())?;
            return plugins::check(file, config.as_deref(), &limits);
        }
        Verb::Plugins(plugins::Cmd::Test {
            file,
            snapshot,
            config,
        }) => {
            let limits = plugins::daemon_limits(cli.config.as_deref())?;
            return plugins::test(file, snapshot, config.as_deref(), &limits);
        }
        _ => {}
    }
    let cfg = Config::load(cli.config.as_deref(), cli.state_dir.as_deref())?;
    if let Verb::Daemon = &cli.verb {
        init_logging();
        crate::daemon::run(cfg)?;
        return Ok(0);
    }
    let ctx = Ctx {
        json: cli.json,
        client: connect(&cli, &cfg)?,
    };
    match cli.verb {
        Verb::Submit(a) => submit::run(ctx, *a),
        Verb::Ls(a) => ls::run(ctx, a),
        Verb::Show { id } => show::run(ctx, id),
        Verb::Logs(a) => logs::run(ctx, a),
        Verb::Cancel { ids } => control::run(ctx, control::Action::Cancel, &ids),
        Verb::Hold { ids } => control::run(ctx, control::Action::Hold, &ids),
        Verb::Release { ids } => control::run(ctx, control::Action::Release, &ids),
        Verb::Retry { ids } => control::run(ctx, control::Action::Retry, &ids),
        Verb::Wait { ids } => wait::run(ctx, &ids),
        Verb::Gpus(a) => gpus::run(ctx, a),
        Verb::Gc { dry_run } => {
            let mut ctx = ctx;
            let r: crate::store::GcReport =
                ctx.client.call(&crate::api::Request::Gc { dry_run })?;
            if ctx.json {
                print_json(&r)?;
            } else {
                println!("{}", r.summary());
            }
            Ok(0)
        }
        Verb::Why { id } => {
            let mut ctx = ctx;
            let report: crate::api::why::WhyReport =
                ctx.client.call(&crate::api::Request::Why { id })?;
            if ctx.json {
                print_json(&report)?;
            } else {
                let now = crate::time::now_ms();
                report
                    .lines(now)
                    .iter()
                    .for_each(|l| println!("{}", table::clean(l)));
            }
            Ok(0)
        }
        Verb::Plugins(cmd) => {
            let mut ctx = ctx;
            match cmd {
                plugins::Cmd::Reload => plugins::reload(&mut ctx.client, ctx.json),
                _ => plugins::ls(&mut ctx.client, ctx.json),
            }
        }
        Verb::Daemon | Verb::Completions { .. } | Verb::Supervise { .. } => Ok(0),
    }
}

/// What every client verb gets.
pub struct Ctx {
    /// `--json` was given.
    pub json: bool,
    /// The connection.
    pub client: Client,
}

fn connect(cli: &Cli, cfg: &Config) -> Result<Client> {
    let mut hint = String::new();
    if let Some(c) = &cli.config {
        hint.push_str(&format!(" --config {}", c.display()));
    }
    if let Some(s) = &cli.state_dir {
        hint.push_str(&format!(" --state-dir {}", s.display()));
    }
    Client::connect(&cfg.socket, &hint)
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NIGHTJAR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// `3 running, 2 waiting, 1 succeeded` for an array's counts.
pub fn ls_counts(c: &crate::store::Counts) -> String {
    ls::counts(c)
}

/// Prints `value` as pretty JSON.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
