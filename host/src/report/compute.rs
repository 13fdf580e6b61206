//! A period's accounting from the store: runs, outcomes, GPU-hours, waits,
//! energy, cost and savings, by project and task name, the series the
//! charts draw and the longest waits.
//!
//! The period's runs are those that ended in `[from, to)`. Each is read
//! once (one statement for all of them, from the covering index
//! `runs_report`); the period's GPU samples are summed into buckets as
//! they are read (index `run_gpu_series_at`); the rest is arithmetic here, with the tariff's prices integrated once over the whole range so
//! pricing a run is two binary searches.

use std::collections::{BTreeMap, HashSet};

use nightjar_core::api::report::{Accounting, Wait};

use super::clock::PriceLine;
use super::groups::{RunFigures, figures, groups};
use super::series::{bucket_ms, series};
use crate::store::{ReportRows, Store};
use crate::tariff::Tariff;

/// How many waits `longest_waits` lists.
pub const LONGEST: usize = 10;

/// The accounting of `[from, to)` (Unix ms) at `now`, priced with
/// `tariff`, its GPUs named by `gpu_names` (index to model; a GPU not in it
/// is `GPU N`). `from > to` is an error; `from == to` is an empty period.
pub fn accounting(
    store: &Store,
    tariff: &Tariff,
    (from, to, now): (i64, i64, i64),
    gpu_names: &BTreeMap<u32, String>,
) -> anyhow::Result<Accounting> {
    if from > to {
        anyhow::bail!("the period starts after it ends (from {from} > to {to})");
    }
    let bucket = bucket_ms(from, to);
    let rows = store.report_rows(from, to, bucket)?;
    let (mut acc, spans) = from_rows(&rows, tariff, (from, to, now), bucket, gpu_names);
    // The waits' reasons: ten reads at most, on the events' index.
    let why = store.wait_reasons(&spans)?;
    for (w, why) in acc.longest_waits.iter_mut().zip(why) {
        w.why = why;
    }
    Ok(acc)
}

/// The period's runs (ended in `[from, to)`) with their figures.
fn period_figures<'a>(
    rows: &'a ReportRows,
    tariff: &Tariff,
    from: i64,
    to: i64,
) -> Vec<RunFigures<'a>> {
    let ended: Vec<(&crate::store::ReportRun, i64)> = rows
        .runs
        .iter()
        .filter_map(|r| {
            r.finished_at
                .filter(|&e| from <= e && e < to)
                .map(|e| (r, e))
        })
        .collect();
    // One price line over every range a run is priced on.
    let lo = ended
        .iter()
        .map(|(r, _)| r.eligible_at.min(r.started_at))
        .min()
        .unwrap_or(from);
    let hi = ended
        .iter()
        .map(|&(r, e)| {
            let dur = e.saturating_sub(r.started_at).max(0);
            e.max(r.started_at).max(r.eligible_at.saturating_add(dur))
        })
        .max()
        .unwrap_or(to);
    let line = PriceLine::new(tariff, lo, hi.max(lo));
    ended
        .into_iter()
        .map(|(r, e)| figures(r, e, tariff, &line))
        .collect()
}

/// The accounting of rows already read, without the waits' reasons, and
/// `(task, ready, started)` of each of `longest_waits` to read them for.
pub fn from_rows(
    rows: &ReportRows,
    tariff: &Tariff,
    (from, to, now): (i64, i64, i64),
    bucket: i64,
    gpu_names: &BTreeMap<u32, String>,
) -> (Accounting, Vec<(i64, i64, i64)>) {
    let figs = period_figures(rows, tariff, from, to);
    let g = groups(&figs);
    let series = series(rows, &figs, (from, to, now), bucket, tariff, gpu_names);
    // The longest waits, one per task (its longest).
    let mut order: Vec<&RunFigures> = figs.iter().collect();
    order.sort_by(|a, b| b.wait_ms.cmp(&a.wait_ms).then(a.run.task.cmp(&b.run.task)));
    let mut seen = HashSet::new();
    let longest: Vec<&RunFigures> = order
        .into_iter()
        .filter(|f| f.wait_ms > 0 && seen.insert(f.run.task))
        .take(LONGEST)
        .collect();
    let spans = longest
        .iter()
        .map(|f| (f.run.task, f.ready, f.run.started_at))
        .collect();
    let longest_waits = longest
        .into_iter()
        .map(|f| Wait {
            task: f.run.task,
            name: f.run.name.clone(),
            project: f.run.project.clone(),
            waited_ms: f.wait_ms,
            why: None,
        })
        .collect();
    let acc = Accounting {
        from,
        to,
        generated_at: now,
        time_zone: tariff.tz.name().to_string(),
        currency: tariff.currency.clone(),
        total: g.total,
        by_project: g.by_project,
        by_user: g.by_user,
        by_task: g.by_task,
        series,
        longest_waits,
        html: None,
    };
    (acc, spans)
}

#[cfg(test)]
#[path = "compute_tests.rs"]
mod tests;
#[cfg(test)]
#[path = "timeline_tests.rs"]
mod timeline_tests;
