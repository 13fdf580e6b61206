//! `simulate --html OUT.html`: one self-contained page of a simulation:
//! its figures, a Gantt chart of the GPUs over time (a bar per run on each
//! GPU it held, coloured by project, the tariff's cheaper hours a strip above),
//! and the queue's length over time. Drawn by `plotters` into inline SVG,
//! as `nightjar report --html` draws its charts.

use std::collections::BTreeMap;

use chrono_tz::Tz;
use plotters::prelude::*;

use super::{Job, Outcome};
use crate::report::charts::{FONT, local, svg_sized, time_format, time_ticks, top};
use crate::report::render::escape;
use crate::report::timeline;
use crate::tariff::Tariff;

/// Most bars the Gantt draws (runs x GPUs): past this the page says how
/// many runs it left out, so a million-job trace gives a page a browser opens.
const MAX_BARS: usize = 40_000;

/// Most points of the queue-length line.
const MAX_POINTS: usize = 2_000;

/// What a page is of.
pub struct Page<'a> {
    /// The page's title (the trace and config).
    pub title: &'a str,
    /// The figures, as `simulate` prints them.
    pub summary: &'a str,
    /// The trace's jobs.
    pub jobs: &'a [Job],
    /// What ran.
    pub outcome: &'a Outcome,
    /// The machine's GPUs.
    pub gpus: u32,
    /// Second 0 (Unix ms).
    pub start_ms: i64,
    /// The tariff whose cheaper hours are shaded.
    pub tariff: &'a Tariff,
    /// The zone of the time axis.
    pub tz: Tz,
}

/// The period drawn: second 0 to the last end (never empty).
fn period(p: &Page) -> (i64, i64) {
    let last = p
        .outcome
        .runs
        .iter()
        .map(|r| r.end)
        .max()
        .unwrap_or(p.start_ms);
    (p.start_ms, last.max(p.start_ms + 1))
}

/// Waiting jobs over time: +1 at each arrival, -1 at each start, thinned to
/// at most [`MAX_POINTS`] (each kept point the most waiting in its stretch).
fn queue_len(p: &Page) -> Vec<(i64, f64)> {
    let mut steps: BTreeMap<i64, i64> = BTreeMap::new();
    for j in p.jobs {
        *steps
            .entry(p.start_ms.saturating_add(j.arrival))
            .or_default() += 1;
    }
    for r in &p.outcome.runs {
        *steps.entry(r.start).or_default() -= 1;
    }
    let mut n = 0i64;
    let all: Vec<(i64, f64)> = steps
        .into_iter()
        .map(|(t, d)| {
            n += d;
            (t, n.max(0) as f64)
        })
        .collect();
    let every = all.len().div_ceil(MAX_POINTS).max(1);
    all.chunks(every)
        .filter_map(|c| c.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)))
        .collect()
}

/// The Gantt chart (`report::timeline`, as the report draws its own): GPU
/// index up, time across; a strip above the GPUs marks the tariff's
/// cheaper hours.
fn gantt(p: &Page) -> Result<timeline::Drawn, String> {
    let (from, to) = period(p);
    let bars: Vec<timeline::Bar> = p
        .outcome
        .runs
        .iter()
        .flat_map(|r| {
            let project = &*p.jobs[r.job].project;
            r.gpus.iter().map(move |&g| timeline::Bar {
                lane: g,
                start: r.start,
                end: r.end,
                group: project,
                failed: false,
            })
        })
        .collect();
    let base = p.tariff.price;
    let cheap: Vec<(i64, i64)> = p
        .tariff
        .spans(from, to)
        .into_iter()
        .filter(|s| s.2 < base)
        .map(|(a, b, _)| (a, b))
        .collect();
    timeline::draw(&timeline::Timeline {
        caption: "GPUs over time (a bar per run; top strip: cheaper electricity)",
        lanes: p.gpus,
        lane_name: "GPU",
        lane_base: 0,
        from,
        to,
        tz: p.tz,
        bars: &bars,
        cheap: &cheap,
        max_bars: MAX_BARS,
        width: 1000,
    })
}

/// The queue's length over time.
fn queue(p: &Page) -> Result<String, String> {
    let (from, to) = period(p);
    let fmt = time_format(to - from);
    let points = queue_len(p);
    let max = points.iter().map(|x| x.1).fold(0.0, f64::max);
    svg_sized((1000, 300), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption("Jobs waiting", (FONT, 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(
                (from..to).with_key_points(time_ticks(from, to, p.tz)),
                0f64..top(max),
            )?;
        chart
            .configure_mesh()
            .x_label_formatter(&|t| local(*t, p.tz, fmt))
            .y_desc("jobs")
            .label_style((FONT, 12))
            .draw()?;
        chart.draw_series(
            AreaSeries::new(
                points.into_iter().filter(|x| x.0 <= to),
                0.0,
                BLUE.mix(0.25),
            )
            .border_style(BLUE.stroke_width(2)),
        )?;
        Ok(())
    })
}

/// The whole page.
pub fn page(p: &Page) -> Result<String, String> {
    let timeline::Drawn {
        svg: gantt,
        left,
        groups,
    } = gantt(p)?;
    let queue = queue(p)?;
    let legend = timeline::legend(&groups, false);
    let cut = if left > 0 {
        format!(
            "<p>The chart draws the first {MAX_BARS} GPU bars; {left} later ones are not drawn.</p>"
        )
    } else {
        String::new()
    };
    Ok(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
<style>body{{font-family:sans-serif;margin:2em;max-width:1100px}}svg{{max-width:100%;height:auto}}pre{{background:#f6f6f6;padding:1em}}</style>\
</head><body><h1>{t}</h1><pre>{s}</pre>{cut}<figure>{gantt}<figcaption>{legend}</figcaption></figure><figure>{queue}</figure>\
<p>Second 0 is {start}.</p></body></html>\n",
        t = escape(p.title),
        s = escape(p.summary),
        start = escape(&local(p.start_ms, p.tz, "%Y-%m-%d %H:%M %Z")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::sim::{Ran, Trace};

    fn tariff() -> Tariff {
        let cfg = crate::config::Config::parse(
            "[tariff]\nprice = 1.0\n[[tariff.windows]]\nfrom = \"01:00\"\nto = \"02:00\"\nprice = 0.5\n",
            std::path::Path::new("/t.toml"),
        )
        .unwrap();
        cfg.tariff()
    }

    /// `n` one-GPU jobs of a minute, one after another on GPU 0.
    fn line(n: usize, project: &str) -> (Trace, Outcome) {
        let mut csv = String::from("id,arrival_s,gpus,duration_s,project\n");
        for i in 0..n {
            csv.push_str(&format!("{},0,1,60,\"{project}\"\n", i + 1));
        }
        let trace = Trace::parse("t.csv", csv.as_bytes()).unwrap();
        let runs = (0..n)
            .map(|i| Ran {
                job: i,
                start: i as i64 * 60_000,
                end: (i as i64 + 1) * 60_000,
                gpus: vec![0],
                preempted: false,
            })
            .collect();
        (
            trace,
            Outcome {
                runs,
                ..Outcome::default()
            },
        )
    }

    fn render(trace: &Trace, outcome: &Outcome, title: &str) -> String {
        page(&Page {
            title,
            summary: "jobs 3 <b>",
            jobs: &trace.jobs,
            outcome,
            gpus: 2,
            start_ms: 0,
            tariff: &tariff(),
            tz: chrono_tz::UTC,
        })
        .unwrap()
    }

    #[test]
    fn the_page_holds_both_charts_and_escapes_what_a_trace_or_config_names() {
        let (trace, outcome) = line(3, "<script>x</script>");
        let html = render(&trace, &outcome, "t.csv under <evil>.toml");
        assert_eq!(html.matches("<svg").count(), 2, "the Gantt and the queue");
        assert!(!html.contains("<script>") && !html.contains("<evil>") && !html.contains("<b>"));
        assert!(
            html.contains("&lt;script&gt;x&lt;/script&gt;"),
            "the project in the legend"
        );
        assert!(!html.contains("not drawn"), "nothing left out");
    }

    #[test]
    fn a_huge_schedule_is_cut_and_says_how_many_runs_it_left_out() {
        let (trace, outcome) = line(MAX_BARS + 123, "p");
        let html = render(&trace, &outcome, "big");
        assert!(
            html.contains("123 later ones are not drawn"),
            "{}",
            &html[..400]
        );
        let points = queue_len(&Page {
            title: "",
            summary: "",
            jobs: &trace.jobs,
            outcome: &outcome,
            gpus: 2,
            start_ms: 0,
            tariff: &tariff(),
            tz: chrono_tz::UTC,
        });
        assert!(points.len() <= MAX_POINTS, "{}", points.len());
        // Every job arrives at 0: the most waiting is all but the first.
        let most = points.iter().map(|p| p.1).fold(0.0, f64::max);
        assert_eq!(most as usize, MAX_BARS + 123 - 1);
    }
}
