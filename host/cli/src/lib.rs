//! The `nightjar` command line: one file per verb. Every verb talks to the
//! daemon over its socket through the typed protocol of `nightjar-core`;
//! `daemon`, `plugins check` and `plugins test` need the plugin host, so they
//! run `nightjard` (next to this binary, else on `PATH`) with the same
//! arguments. This crate links neither wasmtime nor SQLite: a client call
//! starts in about a millisecond.

mod admin;
mod args;
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

use std::path::Path;

use anyhow::Result;
use clap::CommandFactory;

pub use args::{Cli, DaemonCmd, Verb};
pub use manpage::daemon_command;
use nightjar_core::api::{self, ErrorKind};
use nightjar_core::client::{CallError, Client, NotRunning};

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
