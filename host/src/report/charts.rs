//! The report's charts, drawn by `plotters` into SVG strings that the page
//! inlines. Every number is made finite before it reaches a chart (a NaN in
//! an SVG coordinate is a broken chart); a chart without data is `None`, and
//! the page says why in words instead.

use std::error::Error;

use chrono::TimeZone;
use chrono_tz::Tz;
use nightjar_core::api::report::{Accounting, Group};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width and height of every chart, in SVG units (CSS scales them down).
const SIZE: (u32, u32) = (800, 320);

/// The fonts the browser picks from for the charts' `<text>`.
const FONT: &str = "sans-serif";

/// Most bars of the cost-by-project chart (the rest are summed as `other`).
const MAX_BARS: usize = 12;

/// Longest label a bar keeps, in characters.
const MAX_LABEL: usize = 24;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = Result<(), Box<dyn Error>>;

/// `x`, or 0 when it is not a finite number.
pub fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// An axis' upper end that holds `max` with some room (never 0 or less).
fn top(max: f64) -> f64 {
    let m = finite(max);
    if m <= 0.0 { 1.0 } else { m * 1.1 }
}

/// `s` cut to `MAX_LABEL` characters.
fn label(s: &str) -> String {
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
fn svg(draw: impl FnOnce(&Area) -> Drawn) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
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
fn time_format(span: i64) -> &'static str {
    if span <= 36 * 3_600_000 {
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
fn time_ticks(from: i64, to: i64, tz: Tz) -> Vec<i64> {
    use chrono::Timelike;
    const H: i64 = 3_600_000;
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

/// Vertical bars, one per `(label, value)`, with the axis named `unit`;
/// `counts` labels whole numbers only.
fn bars(root: &Area, caption: &str, unit: &str, bars: &[(String, f64)], counts: bool) -> Drawn {
    let n = bars.len();
    let max = bars.iter().map(|b| finite(b.1)).fold(0.0, f64::max);
    // x in tenths of a bar (plotters formats no f64 axis with key points).
    let centers: Vec<i32> = (0..n as i32).map(|i| i * 10 + 5).collect();
    let color = if counts {
        RGBColor(0xb4, 0x3b, 0x3b)
    } else {
        RGBColor(0x2a, 0x7a, 0x4b)
    };
    let mut chart = ChartBuilder::on(root)
        .caption(caption, (FONT, 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((0..n as i32 * 10).with_key_points(centers), 0f64..top(max))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|x| {
            bars.get((x / 10).max(0) as usize)
                .map(|b| label(&b.0))
                .unwrap_or_default()
        })
        .y_label_formatter(&|y| match counts {
            true if y.fract() != 0.0 => String::new(),
            true => format!("{y:.0}"),
            false => format!("{y:.2}"),
        })
        .y_desc(unit)
        .label_style((FONT, 12))
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
        let x = i as i32 * 10;
        Rectangle::new([(x + 1, 0.0), (x + 9, finite(*v).max(0.0))], color.filled())
    }))?;
    Ok(())
}

/// (c) What each project cost, most costly first (the rest as `other`).
pub fn cost_by_project(acc: &Accounting) -> Option<Result<String, String>> {
    if acc.by_project.is_empty() {
        return None;
    }
    let mut rows: Vec<(String, f64)> = acc
        .by_project
        .iter()
        .take(MAX_BARS)
        .map(|g: &Group| (g.key.clone(), finite(g.cost)))
        .collect();
    if acc.by_project.len() > MAX_BARS {
        let rest = acc.by_project[MAX_BARS..]
            .iter()
            .map(|g| finite(g.cost))
            .sum();
        rows.push(("other".into(), rest));
    }
    let unit = format!("cost ({})", acc.currency);
    Some(svg(|root| {
        bars(root, "Cost by project", &unit, &rows, false)
    }))
}

/// (d) Energy used in each hour of the day (bars) against the tariff's mean
/// price then (a line on the right axis): work moved into cheap hours shows
/// as tall bars under a low line.
pub fn energy_by_hour(acc: &Accounting) -> Option<Result<String, String>> {
    let s = &acc.series;
    let energy: Vec<f64> = (0..24)
        .map(|h| finite(s.energy_by_hour.get(h).copied().unwrap_or(0.0)).max(0.0))
        .collect();
    let price: Vec<(i32, f64)> = s
        .price_by_hour
        .iter()
        .take(24)
        .enumerate()
        .filter(|(_, p)| p.is_finite())
        .map(|(h, p)| (h as i32 * 10 + 5, *p))
        .collect();
    if energy.iter().all(|&e| e == 0.0) && price.is_empty() {
        return None;
    }
    let emax = top(energy.iter().copied().fold(0.0, f64::max));
    let pmax = top(price.iter().map(|p| p.1).fold(0.0, f64::max));
    let pmin = price.iter().map(|p| p.1).fold(0.0, f64::min);
    let price_unit = format!("mean price ({}/kWh)", acc.currency);
    Some(svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption("Energy by hour of day, against the price", (FONT, 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .right_y_label_area_size(60)
            // x in tenths of an hour (plotters formats no f64 axis with key points).
            .build_cartesian_2d(
                (0..240).with_key_points((0..8).map(|h| h * 30).collect()),
                0f64..emax,
            )?
            .set_secondary_coord(0..240, pmin..pmax);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&|h| format!("{:02}:00", h / 10))
            .y_desc("kWh")
            .label_style((FONT, 12))
            .draw()?;
        chart
            .configure_secondary_axes()
            .y_desc(price_unit.as_str())
            .label_style((FONT, 12))
            .draw()?;
        let bar = RGBColor(0x3b, 0x6e, 0xb4);
        chart
            .draw_series(energy.iter().enumerate().map(|(h, &e)| {
                let h = h as i32 * 10;
                Rectangle::new([(h + 1, 0.0), (h + 9, e)], bar.filled())
            }))?
            .label("energy (kWh)")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], bar.filled()));
        chart
            .draw_secondary_series(LineSeries::new(price, RED.stroke_width(2)))?
            .label("price")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
        chart
            .configure_series_labels()
            .label_font((FONT, 12))
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    }))
}

/// (e) Ended runs that did not succeed, by class.
pub fn failures(acc: &Accounting) -> Option<Result<String, String>> {
    let rows: Vec<(String, f64)> = acc
        .series
        .failures
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| (c.clone(), *n as f64))
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(svg(|root| {
        bars(root, "Failures by class", "runs", &rows, true)
    }))
}
