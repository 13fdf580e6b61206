//! `nightjar wait ID...`: blocks until the tasks end; the exit status
//! mirrors the outcome (the first task that did not succeed decides):
//!
//! | outcome                        | exit status          |
//! |--------------------------------|----------------------|
//! | succeeded                      | 0                    |
//! | failed with exit code N        | N                    |
//! | command could not be started   | 127                  |
//! | timeout                        | 124                  |
//! | killed by signal N             | 128 + N              |
//! | cancelled                      | 130                  |
//! | lost (host reboot, no retries) | 75                   |
//! | blocked by a failed dependency | 69                   |

use anyhow::Result;

use super::Ctx;
use nightjar_core::api::wire::{RunClass, TaskState};
use nightjar_core::api::{self, WaitResult};

/// Waits and returns the mirrored exit status. On a terminal (stdout and
/// stderr both, no `--json`), a live line on stderr says how far the tasks
/// are while it waits ([`super::wait_live`]).
pub fn run(mut ctx: Ctx, ids: &[i64]) -> Result<i32> {
    use std::io::IsTerminal;
    let live = (!ctx.json && std::io::stdout().is_terminal() && std::io::stderr().is_terminal())
        .then(|| ctx.client.another().ok())
        .flatten()
        .map(|c| super::wait_live::Live::start(c, ids));
    let results = ctx.client.call(api::Wait { ids: ids.to_vec() });
    if let Some(live) = live {
        live.finish();
    }
    let results = results?;
    if ctx.json {
        super::print_json(&results)?;
    } else {
        for r in &results {
            println!(
                "{}\t{}{}",
                r.id,
                r.state.as_str(),
                r.exit_code
                    .map(|c| format!(" (exit {c})"))
                    .unwrap_or_default()
            );
        }
    }
    Ok(results
        .iter()
        .map(exit_status)
        .find(|c| *c != 0)
        .unwrap_or(0))
}

/// The exit status one task's outcome maps to.
pub fn exit_status(r: &WaitResult) -> i32 {
    match r.state {
        TaskState::Succeeded => 0,
        TaskState::Cancelled => 130,
        TaskState::Blocked => 69,
        _ => match (r.class, r.exit_code, r.signal) {
            (Some(RunClass::Timeout), _, _) => 124,
            (Some(RunClass::ValidationFailed), _, _) => 65,
            (Some(RunClass::Lost), _, _) => 75,
            (Some(RunClass::Cancelled), _, _) => 130,
            (_, Some(c), _) if c != 0 => c,
            (_, _, Some(s)) => 128 + s,
            (Some(RunClass::AppError), None, None) => 127,
            _ => 1,
        },
    }
}
