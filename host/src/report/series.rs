//! The series the charts draw: GPU utilisation and queue length per bucket,
//! energy and price by local hour of day, failures by class.

use std::collections::{BTreeMap, HashMap};

use nightjar_core::api::report::{GpuUtil, MAX_TIMELINE, Series, TimelineBar};

use super::clock::{DAY_MS, HOUR_MS, hour_of, hour_pieces};
use super::groups::RunFigures;
use crate::store::ReportRows;
use crate::tariff::Tariff;

/// Most buckets a period's time series has.
pub const MAX_BUCKETS: i64 = 200;

/// Bucket widths to choose from, ms: the first that gives at most
/// `MAX_BUCKETS` buckets, else whole days.
const WIDTHS: [i64; 12] = [
    60_000,
    120_000,
    300_000,
    600_000,
    900_000,
    1_800_000,
    HOUR_MS,
    2 * HOUR_MS,
    3 * HOUR_MS,
    6 * HOUR_MS,
    12 * HOUR_MS,
    DAY_MS,
];

/// The bucket width for `[from, to)`: a round width (1 min to 1 day, then
/// whole days) giving at most 200 buckets, so 1 hour has 1-minute buckets,
/// 7 days 1-hour buckets and 30 days 6-hour buckets.
pub fn bucket_ms(from: i64, to: i64) -> i64 {
    let span = to.saturating_sub(from).max(0);
    let least = span / MAX_BUCKETS + i64::from(span % MAX_BUCKETS != 0);
    WIDTHS
        .iter()
        .copied()
        .find(|w| *w >= least)
        .unwrap_or_else(|| (least + DAY_MS - 1) / DAY_MS * DAY_MS)
}

/// Everything the charts draw. `figs` are the period's runs; `rows` also
/// has runs that ended later or still run (their waits count in the queue).
pub fn series(
    rows: &ReportRows,
    figs: &[RunFigures],
    (from, to, now): (i64, i64, i64),
    bucket: i64,
    tariff: &Tariff,
    gpu_names: &BTreeMap<u32, String>,
) -> Series {
    let (timeline, timeline_left) = timeline(rows, from, to, now);
    let mut failures = BTreeMap::new();
    for f in figs.iter().filter(|f| f.class != "ok") {
        *failures.entry(f.class.to_string()).or_default() += 1;
    }
    Series {
        bucket_ms: bucket,
        gpu_util: gpu_util(rows, from, bucket, gpu_names),
        queue_len: queue_len(rows, from, to.min(now.saturating_add(1)), bucket),
        energy_by_hour: energy_by_hour(figs, tariff.tz),
        price_by_hour: price_by_hour(tariff, from, to),
        failures,
        timeline,
        timeline_left,
        cheap: cheap(tariff, from, to),
    }
}

/// The tariff's spans under its base price within `[from, to)`.
fn cheap(tariff: &Tariff, from: i64, to: i64) -> Vec<(i64, i64)> {
    if to <= from {
        return Vec::new();
    }
    tariff
        .spans(from, to)
        .into_iter()
        .filter(|s| s.2 < tariff.price)
        .map(|(a, b, _)| (a, b))
        .collect()
}

/// The timeline's bars: each run that ran in `[from, to)` on each GPU it
/// held, by start, at most [`MAX_TIMELINE`]; and how many were left out.
fn timeline(rows: &ReportRows, from: i64, to: i64, now: i64) -> (Vec<TimelineBar>, u32) {
    let mut runs: Vec<_> = rows
        .runs
        .iter()
        .filter(|r| !r.gpu_ids.is_empty())
        .map(|r| (r, r.finished_at.unwrap_or(now).max(r.started_at)))
        .filter(|(r, end)| r.started_at < to && *end > from)
        .collect();
    runs.sort_by_key(|(r, _)| (r.started_at, r.task, r.attempt));
    let bars = runs.iter().flat_map(|(r, end)| {
        r.gpu_ids.iter().map(move |&gpu| TimelineBar {
            gpu,
            task: r.task,
            project: r.project.clone(),
            start: r.started_at,
            end: *end,
            class: r.class.clone(),
        })
    });
    let total: usize = runs.iter().map(|(r, _)| r.gpu_ids.len()).sum();
    let kept: Vec<TimelineBar> = bars.take(MAX_TIMELINE).collect();
    let left = u32::try_from(total - kept.len()).unwrap_or(u32::MAX);
    (kept, left)
}

fn gpu_util(
    rows: &ReportRows,
    from: i64,
    bucket: i64,
    names: &BTreeMap<u32, String>,
) -> Vec<GpuUtil> {
    let mut by_gpu: BTreeMap<u32, Vec<(i64, f64)>> = BTreeMap::new();
    for b in rows.gpu_util.iter().filter(|b| b.samples > 0) {
        by_gpu.entry(b.gpu).or_default().push((
            from.saturating_add(b.bucket.saturating_mul(bucket)),
            b.util_sum / b.samples as f64,
        ));
    }
    by_gpu
        .into_iter()
        .map(|(index, mut points)| {
            points.sort_by_key(|p| p.0);
            GpuUtil {
                index,
                name: names
                    .get(&index)
                    .cloned()
                    .unwrap_or_else(|| format!("GPU {index}")),
                points,
            }
        })
        .collect()
}

/// Tasks waiting at each bucket start before `until`: submitted (or back in
/// the queue after a run) and not yet started or ended. A sweep over the
/// waits' starts and ends, sorted once.
fn queue_len(rows: &ReportRows, from: i64, until: i64, bucket: i64) -> Vec<(i64, u32)> {
    // A run waited from its task's submit (first attempt) or from its
    // previous attempt's end until it started.
    let mut prev_end: HashMap<(i64, i64), i64> = HashMap::with_capacity(rows.runs.len());
    for r in &rows.runs {
        if let Some(end) = r.finished_at {
            prev_end.insert((r.task, r.attempt + 1), end);
        }
    }
    let mut starts = Vec::with_capacity(rows.runs.len() + rows.open_waits.len());
    let mut ends = Vec::with_capacity(starts.capacity());
    let mut wait = |a: i64, b: i64| {
        if a < b && b > from && a < until {
            starts.push(a);
            ends.push(b);
        }
    };
    for r in &rows.runs {
        let since = prev_end
            .get(&(r.task, r.attempt))
            .copied()
            .unwrap_or(r.submitted_at);
        wait(since, r.started_at);
    }
    for w in &rows.open_waits {
        wait(w.since, w.until.unwrap_or(i64::MAX));
    }
    starts.sort_unstable();
    ends.sort_unstable();
    let (mut si, mut ei) = (0, 0);
    let mut out = Vec::new();
    let mut t = from;
    while t < until {
        while si < starts.len() && starts[si] <= t {
            si += 1;
        }
        while ei < ends.len() && ends[ei] <= t {
            ei += 1;
        }
        out.push((t, si.saturating_sub(ei) as u32));
        t = t.saturating_add(bucket.max(1));
    }
    out
}

/// kWh by local hour of day: each run's energy spread evenly over its
/// duration (all of it in its start's hour when it took no time).
fn energy_by_hour(figs: &[RunFigures], tz: chrono_tz::Tz) -> Vec<f64> {
    let mut hours = vec![0.0; 24];
    for f in figs.iter().filter(|f| f.kwh > 0.0) {
        let (a, b) = (f.run.started_at, f.end);
        if b <= a {
            hours[hour_of(tz, a)] += f.kwh;
        } else {
            let per_ms = f.kwh / (b - a) as f64;
            hour_pieces(tz, a, b, |h, len| hours[h] += per_ms * len as f64);
        }
    }
    hours
}

/// The tariff's time-weighted mean price in each local hour of day over
/// the period, widened to the week before its end when shorter (so every
/// hour has a price) and narrowed to its last 52 weeks when longer (the
/// tariff repeats weekly).
fn price_by_hour(tariff: &Tariff, from: i64, to: i64) -> Vec<f64> {
    let week = 7 * DAY_MS;
    let from = from.clamp(to.saturating_sub(52 * week), to.saturating_sub(week));
    let (mut sum, mut ms) = (vec![0.0; 24], vec![0i64; 24]);
    for (a, b, price) in tariff.spans(from, to) {
        hour_pieces(tariff.tz, a, b, |h, len| {
            sum[h] += price * len as f64;
            ms[h] += len;
        });
    }
    sum.iter()
        .zip(&ms)
        .map(|(s, &n)| if n > 0 { s / n as f64 } else { tariff.price })
        .collect()
}
