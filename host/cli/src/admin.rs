//! `priority`, `audit` and `whoami`: what administrators do and what the
//! daemon takes the caller for.

use anyhow::Result;

use super::Ctx;
use nightjar_core::api;
use nightjar_core::task::model::Priority;

/// Sets a task's priority (administrators only; audited).
pub fn priority(mut ctx: Ctx, id: i64, level: Priority) -> Result<i32> {
    let c = ctx.client.call(api::Priority {
        id,
        priority: level,
    })?;
    if ctx.json {
        super::print_json(&c)?;
    } else {
        println!("{id}: priority {} ({} task(s))", level.as_str(), c.tasks);
    }
    Ok(0)
}

/// Prints the audit log, oldest first.
pub fn audit(mut ctx: Ctx, since: Option<i64>, limit: Option<u32>) -> Result<i32> {
    let rows = ctx.client.call(api::Audit { since, limit })?;
    if ctx.json {
        super::print_json(&rows)?;
        return Ok(0);
    }
    if rows.is_empty() {
        println!("no administrative actions recorded in this period");
        return Ok(0);
    }
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                nightjar_core::time::fmt_local(r.at),
                r.user.clone(),
                r.action.clone(),
                r.task.map_or_else(|| "-".into(), |t| t.to_string()),
                r.detail.clone(),
            ]
        })
        .collect();
    super::table::print(&["ID", "WHEN", "USER", "ACTION", "TASK", "DETAIL"], &body);
    Ok(0)
}

/// Prints who the daemon takes the caller for.
pub fn whoami(mut ctx: Ctx) -> Result<i32> {
    let me = ctx.client.call(api::Whoami {})?;
    if ctx.json {
        super::print_json(&me)?;
    } else {
        println!(
            "{} (uid {}){}; this daemon {}",
            me.user,
            me.uid,
            if me.admin { ", administrator" } else { "" },
            if me.multi_user {
                "serves every local user and runs each task as its owner"
            } else {
                "serves one user"
            }
        );
    }
    Ok(0)
}
