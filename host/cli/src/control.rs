//! `cancel`, `hold`, `release`, `retry`: one request per id, same shape.

use anyhow::Result;

use super::Ctx;
use nightjar_core::api;

/// Which action.
#[derive(Debug, Clone, Copy)]
pub enum Action {
    /// Cancel.
    Cancel,
    /// Hold.
    Hold,
    /// Release.
    Release,
    /// Retry (`--no-cache`: run for real).
    Retry {
        /// Bypass the result cache.
        no_cache: bool,
    },
}

/// Applies `action` to every id; exit status 1 if any failed (4 if every
/// failure was an unknown id).
pub fn run(mut ctx: Ctx, action: Action, ids: &[i64]) -> Result<i32> {
    let mut results = Vec::new();
    let mut status = 0;
    for &id in ids {
        let done = match action {
            Action::Cancel => ctx
                .client
                .call(api::Cancel { id })
                .map(|c| (summary_cancel(&c), serde_json::json!(c))),
            Action::Hold => ctx
                .client
                .call(api::Hold { id })
                .map(|c| (format!("held {} task(s)", c.tasks), serde_json::json!(c))),
            Action::Release => ctx.client.call(api::Release { id }).map(|c| {
                (
                    format!("released {} task(s)", c.tasks),
                    serde_json::json!(c),
                )
            }),
            Action::Retry { no_cache } => ctx.client.call(api::Retry { id, no_cache }).map(|c| {
                (
                    format!("queued {} task(s) again", c.tasks),
                    serde_json::json!(c),
                )
            }),
        };
        match done {
            Ok((line, value)) => {
                if !ctx.json {
                    println!("{id}: {}", super::table::clean(&line));
                }
                results.push(serde_json::json!({ "id": id, "ok": value }));
            }
            Err(e) => {
                // The first failure decides the status (as `wait` does).
                if status == 0 {
                    status = e.kind().exit_status();
                }
                if !ctx.json {
                    eprintln!(
                        "nightjar: {id}: {}",
                        super::table::clean_text(&e.to_string())
                    );
                }
                results.push(
                    serde_json::json!({ "id": id, "error": e.to_string(), "kind": e.kind() }),
                );
            }
        }
    }
    if ctx.json {
        super::print_json(&results)?;
    }
    Ok(status)
}

fn summary_cancel(c: &api::Cancelled) -> String {
    match (c.cancelled.len(), c.stopping.len()) {
        (c, 0) => format!("cancelled {c} task(s)"),
        (0, s) => {
            format!("stopping {s} running task(s) (SIGTERM, then SIGKILL after the grace period)")
        }
        (c, s) => format!("cancelled {c} task(s), stopping {s} running"),
    }
}
