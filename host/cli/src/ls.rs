//! `nightjar ls`: one line per task; a sweep is one line with member counts.

use std::io::Write;

use anyhow::Result;

use super::{Ctx, table};
use nightjar_core::api;
use nightjar_core::api::wire::{ListFilter, TaskRow, TaskState, fmt_cost, fmt_energy};
use nightjar_core::time::{fmt_span, now_ms};

/// Flags of `ls`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Include tasks that ended more than a day ago.
    #[arg(long, short = 'a')]
    pub all: bool,
    /// Only tasks in this state (queued, held, blocked, running, succeeded, failed, cancelled, scheduled).
    #[arg(long, value_parser = parse_state)]
    pub state: Option<TaskState>,
    /// Only this project.
    #[arg(long)]
    pub project: Option<String>,
    /// Only this user's tasks (on a daemon that serves many users).
    #[arg(long, conflicts_with = "mine")]
    pub user: Option<String>,
    /// Only your own tasks.
    #[arg(long)]
    pub mine: bool,
    /// Also the owner, energy and cost of each task's runs, and each
    /// waiting task's ETA (its expected start, as `nightjar estimate` forecasts it).
    #[arg(long)]
    pub wide: bool,
    /// At most N rows (0: every row): the running tasks first, then the
    /// oldest waiting, then the newest ended, listed by id. The table's
    /// default is 100; `--json` lists every row unless this is given.
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
}

/// How many rows the table shows when `--limit` is not given.
pub const TABLE_LIMIT: u32 = 100;

fn parse_state(s: &str) -> Result<TaskState, String> {
    TaskState::parse(s).ok_or_else(|| format!("`{s}` is not a state"))
}

/// Lists tasks.
pub fn run(mut ctx: Ctx, a: Args) -> Result<i32> {
    let filter = ListFilter {
        state: a.state,
        project: a.project,
        all: a.all,
        since: now_ms() - 86_400_000,
        user: match (a.user, a.mine) {
            (Some(u), _) => Some(u),
            (None, true) => Some(ctx.client.call(api::Whoami {})?.user),
            (None, false) => None,
        },
    };
    let limit = match a.limit {
        Some(0) => None,
        Some(n) => Some(n),
        None if ctx.json => None,
        None => Some(TABLE_LIMIT),
    };
    let rows = ctx.client.call(api::TaskList {
        filter: filter.clone(),
        limit,
    })?;
    if ctx.json {
        super::print_json(&rows)?;
        return Ok(0);
    }
    let now = now_ms();
    let waiting = rows.iter().any(|r| r.state == TaskState::Queued);
    let etas = if a.wide && waiting {
        super::estimate::etas(&mut ctx.client)
    } else {
        Default::default()
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![
                r.id.to_string(),
                r.name.clone(),
                r.project.clone(),
                r.priority.clone(),
                state_cell(r),
                fmt_span(now - r.submitted_at),
            ];
            if a.wide {
                row.push(r.owner.clone().unwrap_or_else(|| "-".into()));
                row.push(r.energy_j.map(fmt_energy).unwrap_or_else(|| "-".into()));
                row.push(match (r.cost, &r.currency) {
                    (Some(c), Some(cur)) => format!("{} {cur}", fmt_cost(c)),
                    _ => "-".into(),
                });
                row.push(etas.get(&r.id).cloned().unwrap_or_else(|| "-".into()));
            }
            row.push(info(r, now));
            row
        })
        .collect();
    let headers: &[&str] = if a.wide {
        &[
            "ID", "NAME", "PROJECT", "PRIO", "STATE", "AGE", "USER", "ENERGY", "COST", "ETA",
            "INFO",
        ]
    } else {
        &["ID", "NAME", "PROJECT", "PRIO", "STATE", "AGE", "INFO"]
    };
    table::print(headers, &cells);
    if may_be_cut(limit, rows.len()) {
        let count = ctx.client.call(api::TaskCount { filter });
        if let Some(note) = cut_note(&rows, count.ok().as_deref()) {
            // Only a note: a stderr that cannot take it (`2>/dev/full`)
            // does not fail a listing that was written (eprintln! panicked).
            let _ = writeln!(std::io::stderr(), "{note}");
        }
    }
    Ok(0)
}

/// Whether the daemon's `limit` may have left rows out: it sent as many as
/// it allows. A daemon from before `limit` ignores it and sends every row,
/// more than that, so nothing was left out and nothing is said.
fn may_be_cut(limit: Option<u32>, shown: usize) -> bool {
    limit.is_some_and(|n| shown == n as usize)
}

/// The line under a table that its limit may have cut: how many rows it
/// left out, in which states, and how to see them; none when it left none
/// out. Without a count (a daemon that cannot count), a note that it may have.
fn cut_note(shown: &[TaskRow], count: Option<&[api::StateCount]>) -> Option<String> {
    let how = "`--limit 0` lists them all; `--state`, `--project` or `--mine` narrow the list";
    let Some(count) = count else {
        return Some(format!("at most {} rows are shown: {how}", shown.len()));
    };
    let mut left: Vec<(TaskState, u32)> = count
        .iter()
        .map(|c| {
            let listed = shown.iter().filter(|r| r.state == c.state).count() as u32;
            (c.state, c.count.saturating_sub(listed))
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    left.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let total: u32 = count.iter().map(|c| c.count).sum();
    let hidden: u32 = left.iter().map(|(_, n)| n).sum();
    if hidden == 0 {
        return None;
    }
    let states: Vec<String> = left
        .iter()
        .map(|(s, n)| format!("{n} {}", s.as_str()))
        .collect();
    Some(format!(
        "{} of {total} rows shown; not shown: {}. {how}",
        shown.len(),
        states.join(", ")
    ))
}

fn state_cell(r: &TaskRow) -> String {
    match &r.counts {
        Some(c) => format!("sweep[{}]", c.total),
        None => r.state.as_str().to_string(),
    }
}

/// The INFO column: counts, reasons, next firing.
pub fn info(r: &TaskRow, now: i64) -> String {
    if let Some(c) = &r.counts {
        return c.summary();
    }
    if let Some(at) = r.next_fire_at {
        return format!(
            "next {} (in {})",
            nightjar_core::time::fmt_local(at),
            fmt_span(at - now)
        );
    }
    if let Some(at) = r.stalled_at {
        return format!("stalled for {} (no GPU use, no output)", fmt_span(now - at));
    }
    r.reason.clone().unwrap_or_else(|| match r.state {
        TaskState::Running => format!("attempt {}", r.attempts),
        _ => String::new(),
    })
}

#[cfg(test)]
#[path = "ls_tests.rs"]
mod tests;
