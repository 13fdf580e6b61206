//! The `nightjard` binary: the daemon, and the offline plugin checks that
//! need the plugin host. It parses the same command line as `nightjar` (the
//! client runs it with its own arguments for `daemon`, `plugins check` and
//! `plugins test`), so flags mean the same in both.

use anyhow::Result;
use nightjar_cli::{Cli, DaemonCmd, Verb, plugins::Cmd};

use crate::config::Config;
use crate::plugins::offline;

/// Runs `nightjard` and returns the process exit status.
pub fn main() -> i32 {
    // `nightjard supervise RUN_DIR [SPEC_LINE]`: the supervisor, when the
    // slim `nightjar-supervise` is missing (started by the daemon, never typed).
    let mut args = std::env::args_os().skip(1);
    if let (Some(verb), Some(dir), line, None) =
        (args.next(), args.next(), args.next(), args.next())
        && verb == "supervise"
        && let Some(line) = crate::sandbox::supervisor::spec_line(line.as_deref())
    {
        return match crate::sandbox::supervisor::main(std::path::Path::new(&dir), line) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("nightjard supervise: {e:#}");
                1
            }
        };
    }
    // `nightjard gpu-sample RUN_DIR SESSION`: a SLURM run's GPUs sampled on
    // its node (started by its job script, never typed).
    let mut args = std::env::args_os().skip(1);
    if let (Some(verb), Some(dir), Some(session), None) =
        (args.next(), args.next(), args.next(), args.next())
        && verb == crate::gpu::node::VERB
    {
        let Some(session) = session.to_str().and_then(|s| s.parse().ok()) else {
            eprintln!("nightjard gpu-sample: the session is not a process id");
            return 2;
        };
        let dir = std::path::PathBuf::from(dir);
        let status = dir.join(crate::sandbox::files::STATUS);
        return match crate::gpu::node::sample_main(&dir, session, &|| status.exists()) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("nightjard gpu-sample: {e:#}");
                1
            }
        };
    }
    // `nightjard compile`: a plugin compile in a process of its own
    // (started by the daemon, never typed).
    let mut args = std::env::args_os().skip(1);
    if let (Some(verb), None) = (args.next(), args.next())
        && verb == crate::plugins::compile::VERB
    {
        return crate::plugins::compile::child_main();
    }
    // `nightjard check` and `nightjard recover` are `nightjard daemon check|recover`.
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(verb) = argv.get(1)
        && (verb == "check" || verb == "recover")
    {
        argv.insert(1, "daemon".into());
    }
    let cli = Cli::parse_from_args(argv);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "nightjard: {}",
                nightjar_cli::table::clean_text(&format!("{e:#}"))
            );
            1
        }
    }
}

fn run(cli: Cli) -> Result<i32> {
    match &cli.verb {
        Verb::Daemon { action } => {
            let cfg = Config::load(cli.config.as_deref(), cli.state_dir.as_deref())?;
            match action {
                None => {
                    crate::daemon::heap::tune();
                    init_logging();
                    crate::daemon::run(cfg, front_ends)?;
                    Ok(0)
                }
                Some(DaemonCmd::Check { full }) => crate::daemon::mend::check(&cfg, *full),
                Some(DaemonCmd::Recover) => crate::daemon::mend::recover(&cfg),
            }
        }
        Verb::Simulate(args) => crate::daemon::sim::main(cli.config.as_deref(), cli.json, args),
        Verb::ProtocolSchema => {
            use std::io::Write;
            // A closed pipe (`| head`) ends the output quietly.
            let _ = writeln!(
                std::io::stdout().lock(),
                "{:#}",
                nightjar_core::api::schema()
            );
            Ok(0)
        }
        Verb::Plugins(Cmd::Check {
            file,
            plugin_config,
        }) => {
            let limits = offline::daemon_limits(cli.config.as_deref())?;
            offline::check(file, plugin_config.as_deref(), &limits)
        }
        Verb::Plugins(Cmd::Test {
            file,
            snapshot,
            trace,
            gpus,
            plugin_config,
        }) => match (snapshot, trace) {
            (Some(snapshot), _) => {
                let limits = offline::daemon_limits(cli.config.as_deref())?;
                offline::test(file, snapshot, plugin_config.as_deref(), &limits)
            }
            (None, Some(trace)) => crate::daemon::sim::plugin_test::main(
                cli.config.as_deref(),
                cli.json,
                file,
                trace,
                *gpus,
                plugin_config.as_deref(),
            ),
            (None, None) => anyhow::bail!("give --snapshot S.json or --trace T.csv"),
        },
        _ => anyhow::bail!(
            "nightjard runs the daemon (`nightjard daemon`), the offline plugin checks (`plugins check`, `plugins test`), `simulate` and `protocol-schema`; every other verb is the client's: `nightjar {}`",
            // Lossy: an argument that is not UTF-8 (a path) is shown, not a panic.
            std::env::args_os()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NIGHTJAR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// The daemon's front ends, wired here so the daemon names neither: the
/// API socket (`api`) and, with `[http] listen`, the HTTP API and the
/// dashboard (`http`, `web`), each answering through `api::Api::call`.
async fn front_ends(
    d: std::sync::Arc<crate::daemon::Daemon>,
) -> Result<Vec<crate::daemon::Server>> {
    let listener = crate::api::socket::bind(&d.cfg.socket, &d.cfg.users)?;
    let api = crate::api::Api::new(d);
    let mut servers: Vec<crate::daemon::Server> =
        vec![Box::pin(crate::api::server::serve(api.clone(), listener))];
    if let Some(l) = crate::http::bind_metrics(&api).await? {
        servers.push(Box::pin(crate::http::serve_metrics(api.clone(), l)));
    }
    if let Some(l) = crate::http::bind(&api).await? {
        servers.push(Box::pin(crate::http::serve(api, l)));
    }
    Ok(servers)
}
