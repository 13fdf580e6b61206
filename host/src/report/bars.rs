//! The report's bar charts: cost by project, energy by hour of day against
//! the price, failures by class (see `charts` for what they share).

use nightjar_core::api::report::{Accounting, Group};
use plotters::prelude::*;

use super::charts::{Area, Drawn, FONT, axis_label, finite, label, svg, top};

/// Most bars of the cost-by-project chart (the rest are summed as `other`).
const MAX_BARS: usize = 12;

/// Vertical bars, one per `(label, value)`, with the axis named `unit`;
/// `counts` labels whole numbers only.
fn bars(root: &Area, caption: &str, unit: &str, bars: &[(String, f64)], counts: bool) -> Drawn {
    let n = bars.len();
    let max = bars.iter().map(|b| finite(b.1)).fold(0.0, f64::max);
    let span = top(max);
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
        .build_cartesian_2d((0..n as i32 * 10).with_key_points(centers), 0f64..span)?;
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
            false => axis_label(*y, span),
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
            .y_label_formatter(&|y| axis_label(*y, emax))
            .y_desc("kWh")
            .label_style((FONT, 12))
            .draw()?;
        chart
            .configure_secondary_axes()
            .y_label_formatter(&|y| axis_label(*y, pmax - pmin))
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
