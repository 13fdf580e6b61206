//! `cancel`, `hold`, `release`, `retry`: one request per id, same shape.

use anyhow::Result;
use serde_json::Value;

use super::Ctx;
use crate::api::Request;

/// Which action.
#[derive(Debug, Clone, Copy)]
pub enum Action {
    /// Cancel.
    Cancel,
    /// Hold.
    Hold,
    /// Release.
    Release,
    /// Retry.
    Retry,
}

/// Applies `action` to every id; exit status 1 if any failed.
pub fn run(mut ctx: Ctx, action: Action, ids: &[i64]) -> Result<i32> {
    let mut results = Vec::new();
    let mut failed = false;
    for &id in ids {
        let req = match action {
            Action::Cancel => Request::Cancel { id },
            Action::Hold => Request::Hold { id },
            Action::Release => Request::Release { id },
            Action::Retry => Request::Retry { id },
        };
        match ctx.client.call::<Value>(&req) {
            Ok(v) => {
                if !ctx.json {
                    println!("{id}: {}", super::table::clean(&summary(action, &v)));
                }
                results.push(serde_json::json!({ "id": id, "ok": v }));
            }
            Err(e) => {
                failed = true;
                if !ctx.json {
                    eprintln!(
                        "nightjar: {id}: {}",
                        super::table::clean_text(&format!("{e:#}"))
                    );
                }
                results.push(serde_json::json!({ "id": id, "error": format!("{e:#}") }));
            }
        }
    }
    if ctx.json {
        super::print_json(&results)?;
    }
    Ok(if failed { 1 } else { 0 })
}

fn summary(action: Action, v: &Value) -> String {
    match action {
        Action::Cancel => {
            let n = |k: &str| v[k].as_array().map(|a| a.len()).unwrap_or(0);
            match (n("cancelled"), n("stopping")) {
                (c, 0) => format!("cancelled {c} task(s)"),
                (0, s) => format!(
                    "stopping {s} running task(s) (SIGTERM, then SIGKILL after the grace period)"
                ),
                (c, s) => format!("cancelled {c} task(s), stopping {s} running"),
            }
        }
        Action::Hold => format!("held {} task(s)", v),
        Action::Release => format!("released {} task(s)", v),
        Action::Retry => format!("queued {} task(s) again", v),
    }
}
