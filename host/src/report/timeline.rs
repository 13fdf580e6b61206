//! The timeline (a Gantt chart) every page draws the same way: one lane per
//! GPU (or per run), time across, a bar per run on each lane it held,
//! coloured by project, failed runs outlined in red, and the tariff's
//! cheaper hours shaded behind the lanes and marked in a strip above them.
//! `nightjar report --html`/`--pdf`, the digest's page, the dashboard and
//! `simulate --html` all draw theirs here.

use std::collections::BTreeMap;

use chrono_tz::Tz;
use plotters::prelude::*;

use super::charts::{FONT, local, svg_sized, time_format, time_ticks};

/// The outline of a bar whose run did not succeed.
const FAILED: RGBColor = RGBColor(0xb0, 0x00, 0x00);

/// One bar: a run on one lane.
#[derive(Debug, Clone)]
pub struct Bar<'a> {
    /// Its lane (a GPU's index), from 0.
    pub lane: u32,
    /// From (Unix ms).
    pub start: i64,
    /// To (Unix ms; a bar shorter than a pixel is still drawn).
    pub end: i64,
    /// What colours it (its project).
    pub group: &'a str,
    /// It did not succeed: outlined in red.
    pub failed: bool,
}

/// A timeline to draw.
pub struct Timeline<'a> {
    /// Its caption.
    pub caption: &'a str,
    /// How many lanes (bars on a lane past it are not drawn, and counted
    /// in [`Drawn::left`]).
    pub lanes: u32,
    /// What a lane is, for the axis (`GPU`).
    pub lane_name: &'a str,
    /// The number the first lane is labelled with (0 for GPUs, 1 for attempts).
    pub lane_base: u32,
    /// The period drawn (Unix ms; `to` after `from`).
    pub from: i64,
    /// Its end.
    pub to: i64,
    /// The zone of the time axis.
    pub tz: Tz,
    /// The bars, in the order they are drawn (the first `max_bars` are).
    pub bars: &'a [Bar<'a>],
    /// Spans of cheaper electricity (Unix ms), shaded.
    pub cheap: &'a [(i64, i64)],
    /// Most bars drawn: past it the page says how many it left out.
    pub max_bars: usize,
    /// Width in SVG units.
    pub width: u32,
}

/// A drawn timeline: the SVG, the bars left out, and each group's colour
/// (sorted by name) for a legend.
pub struct Drawn {
    /// The chart.
    pub svg: String,
    /// Bars not drawn (past `max_bars`, or on a lane past `lanes`).
    pub left: usize,
    /// Each group and its colour.
    pub groups: Vec<(String, RGBAColor)>,
}

/// Draws `t`.
pub fn draw(t: &Timeline) -> Result<Drawn, String> {
    let (from, to) = (t.from, t.to.max(t.from + 1));
    let fmt = time_format(to - from);
    let height = (120 + 14 * t.lanes.min(64)).clamp(200, 1000);
    let lanes = f64::from(t.lanes);
    let mut groups: BTreeMap<&str, usize> = BTreeMap::new();
    let mut left = 0usize;
    let svg = svg_sized((t.width, height), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(t.caption, (FONT, 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(
                (from..to).with_key_points(time_ticks(from, to, t.tz)),
                -0.5f64..(lanes + 0.5),
            )?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_label_formatter(&|x| local(*x, t.tz, fmt))
            .y_label_formatter(&|v| {
                let lane = v.round();
                if (v - lane).abs() > 1e-6 || lane < 0.0 {
                    String::new()
                } else if lane >= lanes {
                    if t.cheap.is_empty() {
                        String::new()
                    } else {
                        "cheap".into()
                    }
                } else {
                    format!("{}", lane as i64 + i64::from(t.lane_base))
                }
            })
            .y_desc(t.lane_name)
            .label_style((FONT, 12))
            .draw()?;
        let cheap = t
            .cheap
            .iter()
            .map(|&(a, b)| (a.max(from), b.min(to)))
            .filter(|(a, b)| a < b);
        chart.draw_series(cheap.clone().map(|(a, b)| {
            Rectangle::new([(a, -0.5), (b, lanes - 0.5)], GREEN.mix(0.08).filled())
        }))?;
        chart.draw_series(cheap.map(|(a, b)| {
            Rectangle::new(
                [(a, lanes - 0.3), (b, lanes + 0.3)],
                GREEN.mix(0.6).filled(),
            )
        }))?;
        let mut fills = Vec::new();
        let mut outlines = Vec::new();
        let mut drawn = 0usize;
        // A run of a few seconds in a night is still a visible sliver.
        let least = ((to - from) / 400).max(1);
        for b in t.bars {
            if b.end < from || b.start > to {
                continue;
            }
            if b.lane >= t.lanes || drawn == t.max_bars {
                left += 1;
                continue;
            }
            drawn += 1;
            let next = groups.len();
            let colour = Palette99::pick(*groups.entry(b.group).or_insert(next)).to_rgba();
            let y = f64::from(b.lane);
            let left_edge = b.start.max(from);
            let corners = [
                (left_edge, y - 0.4),
                (b.end.min(to).max(left_edge + least).min(to), y + 0.4),
            ];
            fills.push(Rectangle::new(corners, colour.filled()));
            if b.failed {
                outlines.push(Rectangle::new(corners, FAILED.stroke_width(3)));
            }
        }
        chart.draw_series(fills)?;
        chart.draw_series(outlines)?;
        Ok(())
    })?;
    let groups = groups
        .into_iter()
        .map(|(name, i)| (name.to_string(), Palette99::pick(i).to_rgba()))
        .collect();
    Ok(Drawn { svg, left, groups })
}

/// A legend of `groups`' colours, as HTML (names escaped), with a red
/// outline's meaning when `failures` were drawn.
pub fn legend(groups: &[(String, RGBAColor)], failures: bool) -> String {
    let mut out: String = groups
        .iter()
        .map(|(name, c)| {
            format!(
                "<span style=\"display:inline-block;margin-right:1.2em\"><span style=\"display:inline-block;width:1em;height:1em;vertical-align:middle;background:rgb({},{},{})\"></span> {}</span>",
                c.0,
                c.1,
                c.2,
                super::render::escape(name)
            )
        })
        .collect();
    if failures {
        out.push_str(
            "<span style=\"display:inline-block\"><span style=\"display:inline-block;width:1em;height:1em;vertical-align:middle;border:3px solid #b00000\"></span> did not succeed</span>",
        );
    }
    out
}

/// The report's timeline of the period (`acc.series.timeline`), with its
/// legend; `None` when no run held a GPU in it.
pub fn of_report(
    acc: &nightjar_core::api::report::Accounting,
    tz: Tz,
) -> Option<Result<String, String>> {
    let s = &acc.series;
    if s.timeline.is_empty() {
        return None;
    }
    let lanes = s
        .timeline
        .iter()
        .map(|b| b.gpu + 1)
        .chain(s.gpu_util.iter().map(|g| g.index + 1))
        .max()
        .unwrap_or(1);
    let bars: Vec<Bar> = s
        .timeline
        .iter()
        .map(|b| Bar {
            lane: b.gpu,
            start: b.start,
            end: b.end,
            group: &b.project,
            failed: b.class.as_deref().is_some_and(|c| c != "ok"),
        })
        .collect();
    let failures = bars.iter().any(|b| b.failed);
    let drawn = draw(&Timeline {
        caption: "GPUs over the period (a bar per run; top strip: cheaper electricity)",
        lanes,
        lane_name: "GPU",
        lane_base: 0,
        from: acc.from,
        to: acc.to,
        tz,
        bars: &bars,
        cheap: &s.cheap,
        max_bars: usize::MAX,
        width: 800,
    });
    Some(drawn.map(|d| {
        let cut = match s.timeline_left {
            0 => String::new(),
            n => format!(
                " The timeline holds the first {} bars; {n} later ones are not drawn.",
                s.timeline.len()
            ),
        };
        format!(
            "{}<figcaption>{}{cut}</figcaption>",
            d.svg,
            legend(&d.groups, failures)
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline<'a>(bars: &'a [Bar<'a>], cheap: &'a [(i64, i64)], max_bars: usize) -> Timeline<'a> {
        Timeline {
            caption: "GPUs",
            lanes: 2,
            lane_name: "GPU",
            lane_base: 0,
            from: 0,
            to: 3_600_000,
            tz: chrono_tz::UTC,
            bars,
            cheap,
            max_bars,
            width: 800,
        }
    }

    fn bar(lane: u32, start: i64, group: &str, failed: bool) -> Bar<'_> {
        Bar {
            lane,
            start,
            end: start + 600_000,
            group,
            failed,
        }
    }

    #[test]
    fn bars_are_coloured_by_group_failures_outlined_and_cheap_hours_shaded() {
        let bars = [
            bar(0, 0, "vision", false),
            bar(1, 600_000, "nlp", true),
            bar(0, 1_200_000, "vision", false),
            // Off the chart: a lane past the last, a run after the period.
            bar(5, 0, "ghost", false),
            bar(0, 9_000_000, "late", false),
        ];
        let cheap = [(1_800_000, 3_600_000)];
        let d = draw(&timeline(&bars, &cheap, 100)).unwrap();
        let names: Vec<&str> = d.groups.iter().map(|g| g.0.as_str()).collect();
        assert_eq!(names, ["nlp", "vision"], "only the groups drawn, by name");
        assert_eq!(
            d.left, 1,
            "the bar on a lane past the last is counted, the late one is off the period"
        );
        let red = d.svg.matches("stroke=\"#B00000\"").count();
        assert_eq!(red, 1, "one failed bar outlined: {}", d.svg);
        let legend = legend(&d.groups, true);
        assert!(legend.contains("nlp") && legend.contains("did not succeed"));
        let none = draw(&timeline(&bars, &[], 100)).unwrap();
        assert!(
            none.svg.len() < d.svg.len(),
            "the cheap hours add a band and a strip"
        );
    }

    #[test]
    fn bars_past_the_cap_are_counted_not_drawn() {
        let bars: Vec<Bar> = (0..10).map(|i| bar(0, i * 60_000, "p", false)).collect();
        let d = draw(&timeline(&bars, &[], 4)).unwrap();
        assert_eq!(d.left, 6);
    }
}
