//! `nightjar estimate [ID...]`: when waiting tasks are expected to start
//! and end, on which GPUs, and what their energy will cost, from the
//! daemon's forecast (the live queue simulated forward); and the expected
//! start `why`, `show` and `ls --wide` add for a waiting task.

use std::collections::HashMap;

use anyhow::Result;

use super::{Ctx, table};
use nightjar_core::api::forecast::{ForecastReport, TaskForecast};
use nightjar_core::api::wire::{fmt_cost, fmt_energy};
use nightjar_core::api::{self};
use nightjar_core::client::Client;
use nightjar_core::time::{fmt_local, fmt_span};

/// Prints the forecast of `ids` (none: every waiting task, as a table).
pub fn run(mut ctx: Ctx, ids: Vec<i64>) -> Result<i32> {
    let every = ids.is_empty();
    let report = ctx.client.call(api::Forecast {
        ids,
        ..api::Forecast::default()
    })?;
    if ctx.json {
        super::print_json(&report)?;
    } else if every {
        print_table(&report);
    } else {
        print_text(&report);
    }
    Ok(0)
}

/// The forecast as `estimate ID` and `submit --dry-run` print it.
pub fn print_text(report: &ForecastReport) {
    print!("{}", render_text(report));
}

/// [`print_text`]'s text: each line escaped on its own, so a name (a sweep
/// member's holds its values) cannot start a line of its own or repaint one.
fn render_text(report: &ForecastReport) -> String {
    report
        .lines()
        .iter()
        .map(|l| format!("{}\n", table::clean(l)))
        .collect()
}

/// Every waiting task, one line each, by expected start.
fn print_table(report: &ForecastReport) {
    let now = report.now;
    let cells: Vec<Vec<String>> = report
        .tasks
        .iter()
        .map(|t| {
            vec![
                t.id.map_or("-".into(), |i| i.to_string()),
                t.name.clone(),
                t.start.map_or("?".into(), fmt_local),
                t.eta(now),
                t.end.map_or("?".into(), fmt_local),
                gpus(t),
                t.energy_kwh.map_or("-".into(), |k| fmt_energy(k * 3.6e6)),
                match (t.cost, &t.currency) {
                    (Some(c), Some(cur)) => format!("{} {cur}", fmt_cost(c)),
                    _ => "-".into(),
                },
                t.unknown.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table::print(
        &[
            "ID", "NAME", "START", "ETA", "END", "GPUS", "ENERGY", "COST", "UNKNOWN",
        ],
        &cells,
    );
    let mut foot = format!("simulated: {}", report.order);
    if !report.not_modelled.is_empty() {
        foot.push_str(&format!(
            "; not modelled: {}",
            report.not_modelled.join(", ")
        ));
    }
    println!("{}", table::clean(&foot));
}

fn gpus(t: &TaskForecast) -> String {
    if t.gpus.is_empty() {
        return "-".into();
    }
    t.gpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The line `why` and `show` add for waiting task `id`: its expected start
/// (and end); `None` when the daemon cannot forecast (an older daemon) or
/// the task is not waiting.
pub fn expected_start(client: &mut Client, id: i64) -> Option<String> {
    let report = client
        .call(api::Forecast {
            ids: vec![id],
            entries: Vec::new(),
            brief: true,
        })
        .ok()?;
    let t = report.tasks.into_iter().next()?;
    if t.state != "queued" {
        return None;
    }
    let mut line = t.start_text(report.now);
    if let (Some(s), Some(e)) = (t.start, t.end) {
        line.push_str(&format!(", end {} ({} run)", fmt_local(e), fmt_span(e - s)));
    }
    Some(line)
}

/// Each waiting task's ETA (`in 2h10m`, `now`, `?`) for `ls --wide`;
/// empty when the daemon cannot forecast.
pub fn etas(client: &mut Client) -> HashMap<i64, String> {
    let Ok(report) = client.call(api::Forecast {
        brief: true,
        ..api::Forecast::default()
    }) else {
        return HashMap::new();
    };
    report
        .tasks
        .iter()
        .filter_map(|t| t.id.map(|id| (id, t.eta(report.now))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_a_newline_or_an_escape_stays_on_its_line() {
        let report = ForecastReport {
            now: 0,
            order: "built-in order".into(),
            not_modelled: Vec::new(),
            tasks: vec![TaskForecast {
                id: Some(7),
                name: "sw[lr=a\ntask 99 (x, queued)\u{1b}[31m]".into(),
                state: "queued".into(),
                start: Some(60_000),
                end: None,
                gpus: vec![0],
                estimate: None,
                power: None,
                energy_kwh: None,
                cost: None,
                currency: None,
                unknown: None,
            }],
            passes: 1,
            chain_passes: 0,
        };
        let text = render_text(&report);
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(
            text.lines().all(|l| !l.starts_with("task 99")),
            "no forged line:\n{text}"
        );
        assert!(text.starts_with("task 7 (sw[lr=a\\u{a}task 99"), "{text}");
        assert_eq!(text.lines().count(), report.lines().len());
    }
}
