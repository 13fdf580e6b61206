//! The report's time charts (GPU utilisation, queue length) and what every
//! chart shares (`bars` has the others). The charts are drawn by `plotters`
//! into SVG strings that the page inlines. Every number is made finite before it reaches a chart (a NaN in
//! an SVG coordinate is a broken chart); a chart without data is `None`, and
//! the page says why in words instead.

use std::error::Error;

use chrono::TimeZone;
use chrono_tz::Tz;
use nightjar_core::api::report::Accounting;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width and height of every chart, in SVG units (CSS scales them down).
const SIZE: (u32, u32) = (800, 320);

/// The fonts the browser picks from for the charts' `<text>`.
pub(crate) const FONT: &str = "sans-serif";

/// Longest label a bar keeps, in characters.
const MAX_LABEL: usize = 24;

pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
pub(crate) type Drawn = Result<(), Box<dyn Error>>;

/// `x`, or 0 when it is not a finite number.
pub fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// An axis' upper end that holds `max` with some room (never 0 or less).
pub(crate) fn top(max: f64) -> f64 {
    let m = finite(max);
    if m <= 0.0 { 1.0 } else { m * 1.1 }
}

/// Decimals the labels of an axis spanning `span` need to read apart: its
/// ticks are about a tenth of it apart (plotters picks 1, 2 or 5 times a
/// power of ten), so one decimal per power of ten below that; none from a
/// span of 10 up, at most 6.
pub(crate) fn axis_digits(span: f64) -> usize {
    let step = finite(span).abs() / 10.0;
    if step <= 0.0 {
        return 0;
    }
    (-step.log10()).ceil().clamp(0.0, 6.0) as usize
}

/// A label of an axis spanning `span` (see [`axis_digits`]); never `-0`.
pub(crate) fn axis_label(y: f64, span: f64) -> String {
    nightjar_core::api::wire::fixed(y, axis_digits(span))
}

/// `s` cut to `MAX_LABEL` characters.
pub(super) fn label(s: &str) -> String {
    if s.chars().count() <= MAX_LABEL {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX_LABEL - 1).collect();
        t.push('…');
        t
    }
}

/// One chart: `draw` on a white area of `SIZE`, as an SVG string; the error
/// says what went wrong.
pub(crate) fn svg(draw: impl FnOnce(&Area) -> Drawn) -> Result<String, String> {
    svg_sized(SIZE, draw)
}

/// As [`svg`], `size` units wide and high.
pub(crate) fn svg_sized(
    size: (u32, u32),
    draw: impl FnOnce(&Area) -> Drawn,
) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        draw(&root).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Local time of `ms` in `tz`, as `fmt`.
pub fn local(ms: i64, tz: Tz, fmt: &str) -> String {
    tz.timestamp_millis_opt(ms)
        .earliest()
        .map(|t| t.format(fmt).to_string())
        .unwrap_or_else(|| ms.to_string())
}

/// A time axis' label format for a period of `span` ms.
pub(crate) fn time_format(span: i64) -> &'static str {
    if span < SHORT && short_step(span) < 60_000 {
        "%H:%M:%S"
    } else if span <= 36 * 3_600_000 {
        "%H:%M"
    } else {
        "%m-%d %H:%M"
    }
}

/// Steps between a time axis' labels, in hours: the first that gives at
/// most 8 labels.
const STEPS_H: [i64; 11] = [1, 2, 3, 4, 6, 12, 24, 48, 168, 336, 720];

/// The labels of the time axis `[from, to)`: whole local hours (midnights
/// for steps of days) about 8 apart.
pub(crate) fn time_ticks(from: i64, to: i64, tz: Tz) -> Vec<i64> {
    use chrono::Timelike;
    const H: i64 = 3_600_000;
    if to - from < SHORT {
        return short_ticks(from, to);
    }
    let span_h = (to - from) / H;
    let step = STEPS_H
        .iter()
        .copied()
        .find(|s| span_h / s <= 8)
        .unwrap_or(span_h / 8 + 1);
    let mut out = Vec::new();
    let mut t = (from + H - 1).div_euclid(H) * H;
    // A period of years is labelled by its walk's first 10,000 hours' pick.
    for _ in 0..10_000 {
        if t >= to || out.len() >= 12 {
            break;
        }
        if let Some(l) = tz.timestamp_millis_opt(t).earliest() {
            let hour = i64::from(l.hour());
            let keep = if step < 24 {
                hour % step == 0
            } else {
                hour == 0 && out.last().is_none_or(|&p: &i64| t - p >= step * H - H)
            };
            if keep {
                out.push(t);
            }
        }
        t += H;
    }
    out
}

/// Steps between a short axis' labels, in seconds: the first that gives
/// at most 8 labels.
const STEPS_S: [i64; 11] = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900];

/// Axes shorter than this (ms) are labelled by [`short_ticks`].
const SHORT: i64 = 2 * 3_600_000;

/// The step between a short axis' labels, ms: the first of [`STEPS_S`]
/// giving at most 8 labels.
fn short_step(span: i64) -> i64 {
    let span_s = span.max(0) / 1000;
    STEPS_S
        .iter()
        .copied()
        .find(|s| span_s / s <= 8)
        .unwrap_or(1800)
        * 1000
}

/// The labels of a time axis under two hours long: whole seconds or
/// minutes about 8 apart (today's zones' offsets are whole minutes, so
/// these are local whole minutes too).
fn short_ticks(from: i64, to: i64) -> Vec<i64> {
    let step = short_step(to - from);
    let first = (from + step - 1).div_euclid(step) * step;
    (0..12)
        .map(|i| first + i * step)
        .take_while(|&t| t < to)
        .collect()
}

/// The period's time axis: `[from, to)`, never empty.
fn period(acc: &Accounting) -> (i64, i64) {
    (acc.from, acc.to.max(acc.from + 1))
}

/// (a) Each GPU's utilisation over the period, one line each.
pub fn gpu_util(acc: &Accounting, tz: Tz) -> Option<Result<String, String>> {
    let gpus = &acc.series.gpu_util;
    if gpus.iter().all(|g| g.points.is_empty()) {
        return None;
    }
    let (from, to) = period(acc);
    let fmt = time_format(to - from);
    Some(svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption("GPU utilisation", (FONT, 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(
                (from..to).with_key_points(time_ticks(from, to, tz)),
                0f64..100f64,
            )?;
        chart
            .configure_mesh()
            .x_label_formatter(&|t| local(*t, tz, fmt))
            .y_desc("%")
            .label_style((FONT, 12))
            .draw()?;
        for (i, g) in gpus.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let points = g
                .points
                .iter()
                .filter(|(t, u)| (from..to).contains(t) && u.is_finite())
                .map(|&(t, u)| (t, u.clamp(0.0, 100.0)));
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))?
                .label(format!("GPU {} {}", g.index, label(&g.name)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .label_font((FONT, 12))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    }))
}

/// (b) Tasks waiting in the queue over the period.
pub fn queue(acc: &Accounting, tz: Tz) -> Option<Result<String, String>> {
    let q = &acc.series.queue_len;
    if q.is_empty() {
        return None;
    }
    let (from, to) = period(acc);
    let fmt = time_format(to - from);
    let max = q.iter().map(|&(_, n)| n).max().unwrap_or(0) as f64;
    Some(svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption("Queue length", (FONT, 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(
                (from..to).with_key_points(time_ticks(from, to, tz)),
                0f64..top(max),
            )?;
        chart
            .configure_mesh()
            .x_label_formatter(&|t| local(*t, tz, fmt))
            // Whole tasks only: a fractional tick is left blank.
            .y_label_formatter(&|y| match y.fract() == 0.0 {
                true => format!("{y:.0}"),
                false => String::new(),
            })
            .y_desc("tasks waiting")
            .label_style((FONT, 12))
            .draw()?;
        let points = q
            .iter()
            .filter(|(t, _)| (from..to).contains(t))
            .map(|&(t, n)| (t, n as f64));
        chart.draw_series(
            AreaSeries::new(points, 0.0, BLUE.mix(0.25)).border_style(BLUE.stroke_width(2)),
        )?;
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(from: i64, days: i64, tz: Tz) -> Vec<String> {
        let fmt = time_format(days * 86_400_000);
        time_ticks(from, from + days * 86_400_000, tz)
            .into_iter()
            .map(|t| local(t, tz, fmt))
            .collect()
    }

    #[test]
    fn time_axes_are_labelled_at_whole_local_hours_or_midnights() {
        let tz: Tz = "Asia/Shanghai".parse().unwrap();
        // 2025-11-30 08:00 in Shanghai, a day: every 3 hours.
        let from = 1_764_460_800_000;
        assert_eq!(
            labels(from, 1, tz),
            [
                "09:00", "12:00", "15:00", "18:00", "21:00", "00:00", "03:00", "06:00"
            ]
        );
        // A week: each midnight.
        let week = labels(from, 7, tz);
        assert_eq!(week.len(), 7, "{week:?}");
        assert!(week.iter().all(|l| l.ends_with("00:00")), "{week:?}");
        // Across the autumn DST change in Berlin (2025-10-26), still midnights.
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let oct = labels(1_761_170_400_000, 7, berlin); // 2025-10-23 00:00 +02
        assert!(oct.iter().all(|l| l.ends_with("00:00")), "{oct:?}");
        assert!(oct.contains(&"10-27 00:00".to_string()), "{oct:?}");
        // A degenerate period draws no labels rather than failing.
        assert!(time_ticks(from, from, tz).is_empty());
    }

    #[test]
    fn a_period_inside_one_hour_is_labelled_at_whole_minutes_or_seconds() {
        let tz: Tz = "Asia/Shanghai".parse().unwrap();
        let from = 1_764_460_800_000 + 5 * 60_000 + 30_000; // 08:05:30
        let ten_min = labels_between(from, from + 10 * 60_000, tz);
        assert_eq!(
            ten_min,
            ["08:06", "08:08", "08:10", "08:12", "08:14"],
            "every 2 minutes"
        );
        let half_minute = labels_between(from, from + 30_000, tz);
        assert_eq!(half_minute.len(), 6, "{half_minute:?}");
        assert!(
            half_minute.iter().all(|l| l.len() == 8),
            "seconds shown: {half_minute:?}"
        );
    }

    fn labels_between(from: i64, to: i64, tz: Tz) -> Vec<String> {
        let fmt = time_format(to - from);
        time_ticks(from, to, tz)
            .into_iter()
            .map(|t| local(t, tz, fmt))
            .collect()
    }

    #[test]
    fn axis_labels_take_the_decimals_their_span_needs_and_never_read_minus_zero() {
        // A demo's cost axis: a few thousandths of a yuan, ticks 0.0005 apart.
        let ticks: Vec<String> = [0.0, 0.0005, 0.001, 0.0015]
            .iter()
            .map(|&y| axis_label(y, top(0.0016)))
            .collect();
        assert_eq!(ticks, ["0.0000", "0.0005", "0.0010", "0.0015"]);
        let unique: std::collections::BTreeSet<_> = ticks.iter().collect();
        assert_eq!(unique.len(), ticks.len(), "no two ticks read alike");
        assert_eq!(axis_label(20.0, top(120.0)), "20");
        assert_eq!(axis_label(0.5, top(5.0)), "0.5");
        assert_eq!(axis_label(-0.000_01, top(0.0016)), "0.0000");
        assert_eq!(axis_digits(0.0), 0);
        assert_eq!(axis_digits(f64::NAN), 0);
        assert_eq!(axis_digits(1e-300), 6, "at most 6");
    }
}
