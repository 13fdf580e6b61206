//! The report's timeline over `compute_tests`' world: a bar per run and
//! GPU it held in the period, by start, a running run ending now, the
//! cheaper hours from the tariff; and the chart drawn from it.

use super::tests::{D, H, names, tariff, world};
use super::*;

#[test]
fn the_timeline_has_a_bar_per_run_and_gpu_in_the_period_and_the_cheap_hours() {
    let (w, a, c) = world();
    let now = D + 40 * H;
    let acc = accounting(&w.s, &tariff(), (D, D + 48 * H, now), &names()).unwrap();
    let bars: Vec<(u32, i64, i64, i64, Option<&str>)> = acc
        .series
        .timeline
        .iter()
        .map(|b| (b.gpu, b.task, b.start - D, b.end - D, b.class.as_deref()))
        .collect();
    // C's two runs on GPU 0, A's on GPUs 0 and 1, G still running on GPU 1
    // (until now); B held no GPU and H ran before the period.
    let g = acc.series.timeline.last().unwrap().task;
    assert_eq!(
        bars,
        [
            (0, c, 2 * H, 3 * H, Some("network")),
            (0, c, 5 * H, 6 * H, Some("ok")),
            (0, a, 23 * H, 25 * H, Some("ok")),
            (1, a, 23 * H, 25 * H, Some("ok")),
            (1, g, 36 * H, 40 * H, None),
        ]
    );
    assert_eq!(acc.series.timeline_left, 0);
    // 23:00-07:00 at 0.2 against 1.0: cheap; the peak is not.
    let cheap: Vec<(i64, i64)> = acc
        .series
        .cheap
        .iter()
        .map(|(a, b)| (a - D, b - D))
        .collect();
    assert_eq!(cheap, [(0, 7 * H), (23 * H, 31 * H), (47 * H, 48 * H)]);

    let html = crate::report::timeline::of_report(&acc, chrono_tz::UTC)
        .expect("a timeline")
        .unwrap();
    assert!(
        html.contains("<svg") && html.contains("did not succeed"),
        "C's network failure is outlined"
    );
    assert!(
        html.contains("alpha") && html.contains("beta"),
        "the legend names both projects"
    );
    let page = crate::report::render::html(&acc);
    assert!(
        page.contains("id=\"timeline\""),
        "the report's page draws it"
    );
}

#[test]
fn a_period_where_no_run_held_a_gpu_says_so_instead_of_a_chart() {
    let (w, _, _) = world();
    let acc = accounting(
        &w.s,
        &tariff(),
        (D - 100 * H, D - 99 * H, D + 40 * H),
        &names(),
    )
    .unwrap();
    assert!(acc.series.timeline.is_empty());
    assert!(crate::report::timeline::of_report(&acc, chrono_tz::UTC).is_none());
    let page = crate::report::render::html(&acc);
    assert!(page.contains("no run held a GPU in this period"));
}
