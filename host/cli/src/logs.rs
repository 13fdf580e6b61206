//! `nightjar logs ID [-f]`: a run's output, read through the daemon (which
//! checks that the caller may read it: its owner, an administrator, or
//! anyone when the daemon shares details). Control characters are escaped
//! ([`super::logs_escape`]) unless `--raw` is given; `--raw` to a terminal
//! is refused for a log that is not the caller's own.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;

use super::Ctx;
use nightjar_core::api::{self, LogChunk, LogCursor};

/// Flags of `logs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Task id.
    pub id: i64,
    /// Follow a live run until it ends.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Standard error instead of standard output.
    #[arg(long)]
    pub stderr: bool,
    /// Attempt number (default: the latest).
    #[arg(long)]
    pub attempt: Option<i64>,
    /// The bytes as they are, control characters too (escape sequences
    /// reach your terminal); refused on a terminal for another's log.
    #[arg(long)]
    pub raw: bool,
}

/// How long `-f` waits before asking again when nothing new came.
const POLL: Duration = Duration::from_millis(200);

/// Prints (or follows) the log.
pub fn run(mut ctx: Ctx, a: Args) -> Result<i32> {
    let mut cursor: Option<LogCursor> = None;
    let mut attempt = a.attempt;
    let mut all = Vec::new();
    let mut out = std::io::stdout();
    let mut first: Option<LogChunk> = None;
    let mut escaper = super::logs_escape::Escaper::default();
    let mut checked = false;
    loop {
        let chunk = ctx.client.call(api::Logs {
            id: a.id,
            attempt,
            stderr: a.stderr,
            cursor,
            tail: None,
        })?;
        // Follow the run first read, even when a retry starts meanwhile.
        attempt = Some(chunk.attempt);
        cursor = Some(chunk.cursor);
        if chunk.missed {
            eprintln!(
                "nightjar: part of the log was rotated away before it was read (`sandbox.log_cap` keeps the newest bytes)"
            );
        }
        if a.raw && !checked {
            checked = true;
            raw_allowed(&chunk)?;
        }
        let bytes = chunk.bytes();
        if ctx.json {
            all.extend_from_slice(&bytes);
        } else if !bytes.is_empty() {
            if a.raw {
                out.write_all(&bytes)?;
            } else {
                out.write_all(&escaper.feed(&bytes))?;
            }
            out.flush()?;
        }
        let (empty, running) = (bytes.is_empty(), chunk.running);
        first.get_or_insert(chunk);
        if empty {
            if !a.follow || !running {
                break;
            }
            std::thread::sleep(POLL);
        }
    }
    if !ctx.json && !a.raw {
        out.write_all(&escaper.finish())?;
    }
    if ctx.json {
        let run = first.map(|c| c.run);
        super::print_json(&serde_json::json!({
            "run": run,
            "stream": if a.stderr { "stderr" } else { "stdout" },
            "text": String::from_utf8_lossy(&all),
        }))?;
    }
    Ok(0)
}

/// `--raw` to a terminal only for the caller's own log: another's escape
/// sequences would reach the reader's terminal.
fn raw_allowed(chunk: &LogChunk) -> Result<()> {
    use std::io::IsTerminal;
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    if std::io::stdout().is_terminal() && chunk.owner_uid.is_some_and(|o| o != me) {
        anyhow::bail!(
            "--raw to a terminal is refused for a log that is not yours (its control characters would reach your terminal); drop --raw to see it escaped, or send it to a file or a pipe"
        );
    }
    Ok(())
}
