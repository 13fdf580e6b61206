//! The HTML report: one self-contained page, its charts inline as SVG.
//!
//! No script, no external URL, no font file: it opens offline from a file
//! or a mail, reads on a phone (viewport, tables that scroll sideways) and
//! prints on A4 (one section a page). Every text that comes from the
//! accounting (task names, projects, reasons: user input) goes through
//! [`escape`]; the charts' text is escaped by plotters' SVG backend.

use std::fmt::Write as _;

use chrono_tz::Tz;
use nightjar_core::api::report::{Accounting, Group};

use super::bars;
use super::charts::{self, local};

/// Rows of the by-task table.
const TOP_TASKS: usize = 20;

/// `s` with `&`, `<`, `>`, `"` and `'` written as character references: safe
/// as element text and as a quoted attribute value.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;
 margin:0 auto;padding:1em;max-width:60em;color:#222;line-height:1.4}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.5em}
.meta{color:#555}.none{color:#555;font-style:italic}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.9em}
th,td{padding:.3em .5em;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th:first-child,td:first-child,th.text,td.text{text-align:left}td.text{white-space:normal;word-break:break-word}
dl.sum{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}dl.sum dt{font-weight:600}dl.sum dd{margin:0}
figure{margin:1em 0}figure svg{width:100%;height:auto;max-width:800px;display:block}
@media print{@page{size:A4;margin:12mm}body{max-width:none;padding:0;font-size:10pt}
 section+section{break-before:page}figure,tr{break-inside:avoid}.scroll{overflow:visible}}
";

/// A number with `digits` decimals (never `-0.00`), `–` when it is not finite.
fn num(x: f64, digits: usize) -> String {
    if x.is_finite() {
        nightjar_core::api::wire::fixed(x, digits)
    } else {
        "–".into()
    }
}

/// An amount (money, GPU-hours) as the CLI's report writes it (four
/// decimals under a hundredth), `–` when it is not finite.
fn money(x: f64) -> String {
    if x.is_finite() {
        nightjar_core::api::wire::fmt_cost(x)
    } else {
        "–".into()
    }
}

/// A wait for a person: `45s`, `12m 3s`, `3h 12m`, `2d 4h`; `–` for none.
pub fn duration(ms: Option<i64>) -> String {
    let Some(ms) = ms else { return "–".into() };
    let s = ms.max(0) / 1000;
    let (d, h, m) = (s / 86_400, s / 3_600 % 24, s / 60 % 60);
    match () {
        _ if d > 0 => format!("{d}d {h}h"),
        _ if h > 0 => format!("{h}h {m}m"),
        _ if m > 0 => format!("{m}m {}s", s % 60),
        _ => format!("{s}s"),
    }
}

/// Runs of `g` that succeeded.
fn succeeded(g: &Group) -> u64 {
    ["succeeded", "ok"]
        .iter()
        .filter_map(|k| g.outcomes.get(*k))
        .sum()
}

/// The page for `acc`.
pub fn html(acc: &Accounting) -> String {
    let tz: Tz = acc.time_zone.parse().unwrap_or(Tz::UTC);
    let (from, to) = (
        local(acc.from, tz, "%Y-%m-%d %H:%M"),
        local(acc.to, tz, "%Y-%m-%d %H:%M"),
    );
    let title = format!("nightjar report {from} – {to}");
    let mut p = String::new();
    let _ = write!(
        p,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(&title)
    );
    let _ = write!(
        p,
        "<section id=\"summary\"><h1>{}</h1>\n<p class=\"meta\">Times in {}; costs in {}; \
         generated {}.</p>\n",
        escape(&title),
        escape(&acc.time_zone),
        escape(&acc.currency),
        escape(&local(acc.generated_at, tz, "%Y-%m-%d %H:%M")),
    );
    summary(&mut p, acc);
    if acc.total.runs > 0 {
        table(&mut p, "By project", "Project", &acc.by_project, acc);
    }
    p.push_str("</section>\n");
    if acc.total.runs > 0 {
        if acc.by_user.len() > 1 {
            p.push_str("<section id=\"users\">");
            table(&mut p, "By user", "User", &acc.by_user, acc);
            p.push_str("</section>\n");
        }
        p.push_str("<section id=\"tasks\">");
        let top = &acc.by_task[..acc.by_task.len().min(TOP_TASKS)];
        let h = if acc.by_task.len() > TOP_TASKS {
            format!("By task name (top {TOP_TASKS} of {})", acc.by_task.len())
        } else {
            "By task name".into()
        };
        table(&mut p, &h, "Task name", top, acc);
        p.push_str("</section>\n");
    }
    let [machine, money, failures] = chart_groups(acc, tz);
    let _ = write!(
        p,
        "<section id=\"use\"><h2>Use of the machine</h2>\n{machine}</section>\n\
         <section id=\"money\"><h2>Cost and energy</h2>\n{money}</section>\n\
         <section id=\"failures\"><h2>Failures and waits</h2>\n{failures}"
    );
    waits(&mut p, acc);
    p.push_str("</section>\n</body></html>\n");
    p
}

/// The report's charts in their three groups (the machine's use; cost and
/// energy; failures), each the figures' HTML: the page and the dashboard
/// give them their own headings.
pub fn chart_groups(acc: &Accounting, tz: Tz) -> [String; 3] {
    let mut machine = String::new();
    figure(
        &mut machine,
        "timeline",
        super::timeline::of_report(acc, tz),
        "no run held a GPU in this period",
    );
    figure(
        &mut machine,
        "gpu-util",
        charts::gpu_util(acc, tz),
        "no GPU samples in this period",
    );
    figure(
        &mut machine,
        "queue",
        charts::queue(acc, tz),
        "no queue samples in this period",
    );
    let mut money = String::new();
    figure(
        &mut money,
        "cost",
        bars::cost_by_project(acc),
        "no runs in this period",
    );
    figure(
        &mut money,
        "energy",
        bars::energy_by_hour(acc),
        "no energy or price in this period",
    );
    let mut failures = String::new();
    figure(
        &mut failures,
        "failures",
        bars::failures(acc),
        "no failures in this period",
    );
    [machine, money, failures]
}

/// The summary section (totals) of `acc`.
pub fn summary(p: &mut String, acc: &Accounting) {
    let t = &acc.total;
    p.push_str("<h2>Summary</h2>\n");
    if t.runs == 0 {
        p.push_str("<p class=\"none\">no runs in this period</p>\n");
        return;
    }
    let ok = succeeded(t);
    let cur = escape(&acc.currency);
    let rows = [
        ("Runs", t.runs.to_string()),
        ("Succeeded", ok.to_string()),
        ("Did not succeed", t.runs.saturating_sub(ok).to_string()),
        ("GPU-hours", money(t.gpu_hours)),
        (
            "Energy",
            format!(
                "{} kWh ({} kWh estimated)",
                num(t.energy_kwh, 3),
                num(t.estimated_kwh, 3)
            ),
        ),
        ("Cost", format!("{} {cur}", money(t.cost))),
        ("Savings", format!("{} {cur}", money(t.savings))),
        (
            "Wait p50 / p95",
            format!("{} / {}", duration(t.wait_p50_ms), duration(t.wait_p95_ms)),
        ),
    ];
    p.push_str("<dl class=\"sum\">");
    for (k, v) in rows {
        let _ = write!(p, "<dt>{k}</dt><dd>{v}</dd>");
    }
    p.push_str(
        "</dl>\n<p class=\"meta\">Savings: what these runs would have cost had each \
                started when it was submitted (same length, same mean power, the price then), \
                less what they cost.</p>\n",
    );
}

fn table(p: &mut String, heading: &str, first: &str, rows: &[Group], acc: &Accounting) {
    let _ = write!(
        p,
        "<h2>{}</h2>\n<div class=\"scroll\"><table><thead><tr><th>{first}</th><th>Runs</th>\
         <th>Succeeded</th><th>Failed</th><th>GPU-h</th><th>Wait p50</th><th>Wait p95</th>\
         <th>kWh</th><th>Cost ({cur})</th><th>Savings ({cur})</th></tr></thead><tbody>\n",
        escape(heading),
        cur = escape(&acc.currency),
    );
    for g in rows {
        let ok = succeeded(g);
        let _ = writeln!(
            p,
            "<tr><td class=\"text\">{}</td><td>{}</td><td>{ok}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&g.key),
            g.runs,
            g.runs.saturating_sub(ok),
            money(g.gpu_hours),
            duration(g.wait_p50_ms),
            duration(g.wait_p95_ms),
            num(g.energy_kwh, 3),
            money(g.cost),
            money(g.savings),
        );
    }
    p.push_str("</tbody></table></div>\n");
}

/// A chart's figure, or the sentence `none` when it has no data, or the
/// error when it could not be drawn.
pub fn figure(p: &mut String, id: &str, chart: Option<Result<String, String>>, none: &str) {
    match chart {
        Some(Ok(svg)) => {
            let _ = writeln!(p, "<figure id=\"{id}\">{svg}</figure>");
        }
        Some(Err(e)) => {
            let _ = writeln!(
                p,
                "<p class=\"none\" id=\"{id}\">chart not drawn: {}</p>",
                escape(&e)
            );
        }
        None => {
            let _ = writeln!(p, "<p class=\"none\" id=\"{id}\">{none}</p>");
        }
    }
}

/// (f) The longest waits, with the last reason each was given.
fn waits(p: &mut String, acc: &Accounting) {
    p.push_str("<h2>Longest waits</h2>\n");
    if acc.longest_waits.is_empty() {
        p.push_str("<p class=\"none\">no waits in this period</p>\n");
        return;
    }
    p.push_str(
        "<div class=\"scroll\"><table id=\"waits\"><thead><tr><th>Task</th><th class=\"text\">Name</th>\
         <th class=\"text\">Project</th><th>Waited</th><th class=\"text\">Why</th></tr></thead><tbody>\n",
    );
    for w in &acc.longest_waits {
        let _ = writeln!(
            p,
            "<tr><td>#{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td>\
             <td class=\"text\">{}</td></tr>",
            w.task,
            escape(&w.name),
            escape(&w.project),
            duration(Some(w.waited_ms)),
            escape(w.why.as_deref().unwrap_or("–")),
        );
    }
    p.push_str("</tbody></table></div>\n");
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
