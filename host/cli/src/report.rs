//! `nightjar report`: what the runs that ended in a period did, used and
//! cost, by project (or task name, user, or all together): a table with a
//! total row and a footer, `--csv`, `--json` (the daemon's `Accounting`),
//! and the HTML page to a file (`--html`, `--pdf`).

use std::path::PathBuf;

use anyhow::Result;
use chrono::{DateTime, Local, NaiveDate, TimeZone};

use super::{Ctx, table};
use nightjar_core::api::report::{Accounting, Group, Report};
use nightjar_core::api::wire::{RunClass, fmt_amount, fmt_cost, fmt_energy};
use nightjar_core::time::{fmt_local, fmt_span, span_ms};

/// The period when none is given.
const DEFAULT_SINCE_MS: i64 = 7 * 86_400_000;
/// The longest `--since`.
const MAX_SINCE_MS: i64 = 1000 * 366 * 86_400_000;

/// Flags of `report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The period: the runs that ended in the last DURATION (`12h`, `7d`,
    /// `30d`; at most 1000 years). The default is 7d.
    #[arg(long, value_name = "DURATION", value_parser = parse_since, conflicts_with_all = ["from", "to"])]
    pub since: Option<i64>,
    /// Start of the period: RFC 3339 (`2024-05-01T18:00:00+02:00`) or
    /// `YYYY-MM-DD` (midnight where the CLI runs). Needs --to.
    #[arg(long, value_name = "TIME", value_parser = parse_time, requires = "to")]
    pub from: Option<i64>,
    /// End of the period (exclusive), as --from. Needs --from.
    #[arg(long, value_name = "TIME", value_parser = parse_time, requires = "from")]
    pub to: Option<i64>,
    /// One row per project, task name, user, or only the total (`all`).
    #[arg(long, value_enum, default_value_t = By::Project)]
    pub by: By,
    /// CSV instead of the table: a header, then one line per row (RFC 4180).
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Also write the self-contained HTML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the report as a PDF to FILE.
    #[arg(long, value_name = "FILE")]
    pub pdf: Option<PathBuf>,
    /// Instead of the report: the period's finished runs as a trace for
    /// `nightjar simulate` (CSV: one job per run, arriving when it became
    /// eligible; `# start:` names second 0, the period's start).
    #[arg(long, conflicts_with_all = ["csv", "html", "pdf"])]
    pub trace: bool,
}

/// What the rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    /// One row per project.
    Project,
    /// One row per task name.
    Task,
    /// One row per user (none yet: tasks have no owner).
    User,
    /// Only the total.
    All,
}

fn parse_since(s: &str) -> Result<i64, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration ({e}): write e.g. 12h, 7d or 30d"))?;
    let ms = span_ms(d);
    if ms > MAX_SINCE_MS {
        return Err(format!("`{s}` is longer than 1000 years"));
    }
    Ok(ms)
}

/// RFC 3339, or `YYYY-MM-DD` as local midnight (the first instant of that
/// day where midnight falls in a DST gap), in Unix ms.
fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    let day = NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| {
        format!("`{s}` is not a time: write RFC 3339 (2024-05-01T18:00:00+02:00) or YYYY-MM-DD")
    })?;
    (0..4)
        .filter_map(|h| day.and_hms_opt(h, 0, 0))
        .find_map(|t| Local.from_local_datetime(&t).earliest())
        .map(|t| t.timestamp_millis())
        .ok_or_else(|| format!("`{s}` has no midnight in the local time zone"))
}

impl Args {
    /// The period `(from, to)` in Unix ms, or why the flags do not make one.
    pub fn period(&self, now: i64) -> Result<(i64, i64), String> {
        match (self.from, self.to) {
            (Some(from), Some(to)) if from > to => Err(format!(
                "--from ({}) is after --to ({}): the period would end before it starts",
                fmt_local(from),
                fmt_local(to)
            )),
            (Some(from), Some(to)) => Ok((from, to)),
            _ => Ok((
                now.saturating_sub(self.since.unwrap_or(DEFAULT_SINCE_MS)),
                now,
            )),
        }
    }
}

/// Asks the daemon for the period's accounting and prints it.
pub fn run(mut ctx: Ctx, a: Args, (from, to): (i64, i64)) -> Result<i32> {
    if a.trace {
        let rows = ctx.client.call(nightjar_core::api::RunTrace { from, to })?;
        if ctx.json {
            super::print_json(&rows)?;
        } else {
            print!("{}", rows.csv());
        }
        return Ok(0);
    }
    let files = a.html.is_some() || a.pdf.is_some();
    let mut acc = ctx.client.call(Report {
        from,
        to,
        html: files,
    })?;
    if let Some(html) = acc.html.take() {
        if let Some(p) = &a.html {
            crate::report_files::write_html(p, &html)?;
            eprintln!("wrote {}", p.display());
        }
        if let Some(p) = &a.pdf {
            crate::report_files::write_pdf(p, &html)?;
            eprintln!("wrote {}", p.display());
        }
    }
    if ctx.json {
        super::print_json(&acc)?;
    } else if a.csv {
        print!("{}", csv(&acc, a.by));
    } else {
        print_table(&acc, a.by);
    }
    Ok(0)
}

/// The rows `by` asks for.
fn rows(acc: &Accounting, by: By) -> &[Group] {
    match by {
        By::Project => &acc.by_project,
        By::Task => &acc.by_task,
        By::User => &acc.by_user,
        By::All => std::slice::from_ref(&acc.total),
    }
}

/// The first column's name.
fn key_name(by: By) -> &'static str {
    match by {
        By::Project => "project",
        By::Task => "task",
        By::User => "user",
        By::All => "group",
    }
}

fn cells(g: &Group) -> Vec<String> {
    let ok = g.outcomes.get("ok").copied().unwrap_or(0);
    let wait = |w: Option<i64>| w.map_or_else(|| "-".into(), fmt_span);
    let energy = fmt_energy(g.energy_kwh * 3_600_000.0);
    vec![
        g.key.clone(),
        g.runs.to_string(),
        ok.to_string(),
        (g.runs - ok.min(g.runs)).to_string(),
        fmt_amount(g.gpu_hours),
        wait(g.wait_p50_ms),
        wait(g.wait_p95_ms),
        if g.estimated_kwh > 0.0 {
            format!("~{energy}")
        } else {
            energy
        },
        fmt_cost(g.cost),
        fmt_cost(g.savings),
    ]
}

fn print_table(acc: &Accounting, by: By) {
    let head = key_name(by).to_uppercase();
    let headers = [
        head.as_str(),
        "RUNS",
        "OK",
        "FAILED",
        "GPU-H",
        "WAIT P50",
        "WAIT P95",
        "ENERGY",
        "COST",
        "SAVED",
    ];
    let mut lines: Vec<Vec<String>> = match by {
        By::All => Vec::new(),
        _ => rows(acc, by).iter().map(cells).collect(),
    };
    let mut total = cells(&acc.total);
    total[0] = "total".into();
    lines.push(total);
    table::print(&headers, &lines);
    println!(
        "\n{} runs ended from {} to {} ({}); money in {}.",
        acc.total.runs,
        fmt_local(acc.from),
        fmt_local(acc.to),
        nightjar_core::time::local_zone_name(),
        table::clean(&acc.currency)
    );
    println!(
        "FAILED: runs that did not end ok (`--json` has them by class). WAIT: from ready (submit, or a retry's backoff end) to start."
    );
    println!(
        "SAVED: what the runs would have cost had each started as soon as it was ready (same duration and mean power, at the tariff's prices then), minus what they cost."
    );
    if acc.total.estimated_kwh > 0.0 {
        println!("~: includes estimated energy (CPU-only runs with no power counter).");
    }
}

/// One RFC 4180 field: quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV: a header, then one line per row of `by`, CRLF line ends.
pub fn csv(acc: &Accounting, by: By) -> String {
    let rows = rows(acc, by);
    // Every class, in the order `ls` lists them, then any other the rows have.
    let mut classes: Vec<String> = RunClass::ALL.iter().map(|c| c.as_str().into()).collect();
    for g in rows {
        for k in g.outcomes.keys() {
            if !classes.contains(k) {
                classes.push(k.clone());
            }
        }
    }
    let mut head = vec![key_name(by).to_string(), "runs".into()];
    head.extend(classes.iter().map(|c| field(&format!("outcome_{c}"))));
    head.extend(
        [
            "gpu_hours",
            "wait_p50_ms",
            "wait_p95_ms",
            "energy_kwh",
            "estimated_kwh",
            "cost",
            "cost_at_submit",
            "savings",
            "currency",
        ]
        .map(String::from),
    );
    let mut out = head.join(",") + "\r\n";
    let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    for g in rows {
        let mut line = vec![field(&g.key), g.runs.to_string()];
        line.extend(
            classes
                .iter()
                .map(|c| g.outcomes.get(c).copied().unwrap_or(0).to_string()),
        );
        line.extend([
            g.gpu_hours.to_string(),
            opt(g.wait_p50_ms),
            opt(g.wait_p95_ms),
            g.energy_kwh.to_string(),
            g.estimated_kwh.to_string(),
            g.cost.to_string(),
            g.cost_at_submit.to_string(),
            g.savings.to_string(),
            field(&acc.currency),
        ]);
        out.push_str(&line.join(","));
        out.push_str("\r\n");
    }
    out
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
