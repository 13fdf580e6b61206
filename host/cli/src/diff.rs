//! `nightjar diff RUN1 RUN2`: what differs between two runs (code, command,
//! workdir, env, inputs, python, gpus, system, policies, outputs), one row
//! per difference, then the sections that are the same. The exit status
//! is 0 whether or not they differ.

use anyhow::Result;

use super::Ctx;
use super::table::{self, clean};
use nightjar_core::api::diff::{Diff, RunDiff, diff, shorten};

/// Most rows the table prints (`--json` has them all).
const MAX_ROWS: usize = 50;

/// Longest cell, in characters (`--json` has the whole value).
const MAX_CELL: usize = 100;

/// Fetches both runs' manifests and prints their differences.
pub fn run(mut ctx: Ctx, a: i64, b: i64) -> Result<i32> {
    let pair = ctx.client.call(Diff { a, b })?;
    let d = diff(&pair.a, &pair.b);
    if ctx.json {
        super::print_json(&d)?;
    } else {
        print(&d);
    }
    Ok(0)
}

fn cell(v: &Option<String>) -> String {
    let Some(v) = v else { return "-".into() };
    let s = shorten(v);
    if s.chars().count() > MAX_CELL {
        let cut: String = s.chars().take(MAX_CELL - 3).collect();
        format!("{cut}...")
    } else {
        s
    }
}

fn print(d: &RunDiff) {
    let side = |s: &nightjar_core::api::diff::Side| format!("run {} (task {})", s.run, s.task);
    if d.changes.is_empty() {
        println!("no differences between {} and {}", side(&d.a), side(&d.b));
    } else {
        let rows: Vec<Vec<String>> = d
            .changes
            .iter()
            .take(MAX_ROWS)
            .map(|c| {
                vec![
                    c.section.as_str().to_string(),
                    cell(&Some(c.what.clone())),
                    cell(&c.a),
                    cell(&c.b),
                ]
            })
            .collect();
        let (ha, hb) = (format!("run {}", d.a.run), format!("run {}", d.b.run));
        table::print(&["section", "what", &ha, &hb], &rows);
        if d.changes.len() > MAX_ROWS {
            println!(
                "... and {} more difference(s) (`nightjar --json diff {} {}` lists them all)",
                d.changes.len() - MAX_ROWS,
                d.a.run,
                d.b.run
            );
        }
    }
    let same: Vec<&str> = d.same.iter().map(|s| s.as_str()).collect();
    println!(
        "same: {}",
        if same.is_empty() {
            "nothing".to_string()
        } else {
            same.join(", ")
        }
    );
    for n in &d.notes {
        println!("note: {}", clean(n));
    }
}
