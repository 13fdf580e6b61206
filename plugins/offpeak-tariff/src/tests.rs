//! The policy against snapshots built natively, with the host's tariff
//! stood in for by a `TariffMock`.

use super::*;
use nightjar_sdk::testing::{SnapshotBuilder, queued_task};

const HOUR: i64 = 3_600_000;
// 2026-11-30 00:00 UTC, a Monday.
const MONDAY: i64 = 1_796_083_200_000 - DAY_MS;

fn parse(text: &str) -> Result<Config, ConfigError> {
    OffpeakTariff::configure(text)
}

fn evaluate(s: Snapshot<'_>) -> Evaluation {
    let cfg = parse(
        "currency = \"CNY\"\npeak_price = 1.2\nmargin = \"30m\"\n[[windows]]\nstart = \"23:00\"\nend = \"07:00\"\nprice = 0.35\n",
    )
    .unwrap();
    OffpeakTariff::evaluate(&cfg, &s)
}

fn with_runtime(id: i64, priority: Priority, hours: i64) -> QueuedTask<'static> {
    let mut t = queued_task(id, "p", priority, 0);
    t.estimated_runtime = Some((hours * HOUR) as u64);
    t
}

#[test]
fn outside_the_window_work_waits_with_price_and_next_opening() {
    let s = SnapshotBuilder::at(MONDAY + 18 * HOUR + 48 * 60_000)
        .queued(1, "p", Priority::Normal, 0)
        .queued(2, "p", Priority::Urgent, 0)
        .build();
    let e = evaluate(s);
    assert_eq!(e.verdicts.len(), 1, "urgent is never deferred");
    match &e.verdicts[0].verdict {
        Verdict::Defer(d) => {
            assert_eq!(
                d.reason,
                "price 1.20 CNY/kWh until 23:00 UTC (in 4h12m), then 0.35 CNY/kWh"
            );
            assert_eq!(d.until, Some(MONDAY + 23 * HOUR));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn inside_the_window_long_work_that_would_overrun_waits_short_work_runs() {
    // 05:00: the window ends at 07:00, margin 30 min.
    let s = SnapshotBuilder::at(MONDAY + 5 * HOUR)
        .queued_task(with_runtime(1, Priority::Normal, 1))
        .queued_task(with_runtime(2, Priority::Normal, 3))
        .build();
    let e = evaluate(s);
    assert_eq!(e.verdicts.len(), 1);
    assert_eq!(e.verdicts[0].task, 2);
    match &e.verdicts[0].verdict {
        Verdict::Defer(d) => {
            assert!(d.reason.starts_with("would run 1h00m past"), "{}", d.reason)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reason_names_the_zone_its_times_are_in() {
    // 10:00 UTC is 18:00 in Shanghai: peak there, the window opens at 23:00 Shanghai time.
    let s = SnapshotBuilder::at(MONDAY + 10 * HOUR)
        .utc_offset(8 * 3600)
        .time_zone("Asia/Shanghai")
        .queued(1, "p", Priority::Normal, 0)
        .build();
    match &evaluate(s).verdicts[0].verdict {
        Verdict::Defer(d) => {
            assert!(
                d.reason.contains("until 23:00 Asia/Shanghai (in 5h00m)"),
                "{}",
                d.reason
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_window_is_in_the_daemons_time_zone() {
    // 16:00 UTC is 00:00 in UTC+8: inside the window there.
    let s = SnapshotBuilder::at(MONDAY + 16 * HOUR)
        .utc_offset(8 * 3600)
        .queued(1, "p", Priority::Normal, 0)
        .build();
    assert!(evaluate(s).verdicts.is_empty());
}

/// The host's tariff: 1.20 by day, 0.30 from 23:00 to 07:00, and a
/// 0.60 shoulder from 07:00 to 09:00 (Monday, UTC).
fn host_tariff() -> nightjar_sdk::tariff::TariffMock {
    use nightjar_sdk::tariff::{PriceSpan, Schedule, TariffMock};
    let mut spans = Vec::new();
    for d in -1..9 {
        let day = MONDAY + d * DAY_MS;
        spans.push(PriceSpan {
            start: day - HOUR,
            end: day + 7 * HOUR,
            price: 0.3,
        });
        spans.push(PriceSpan {
            start: day + 7 * HOUR,
            end: day + 9 * HOUR,
            price: 0.6,
        });
        spans.push(PriceSpan {
            start: day + 9 * HOUR,
            end: day + 23 * HOUR,
            price: 1.2,
        });
    }
    TariffMock::install(Schedule {
        currency: "EUR".into(),
        spans,
    })
}

fn defer_reason(e: &Evaluation) -> (String, Option<i64>) {
    match &e.verdicts[0].verdict {
        Verdict::Defer(d) => (d.reason.to_string(), d.until),
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_windows_of_its_own_the_hosts_tariff_decides() {
    let _t = host_tariff();
    let cfg = parse("margin = \"30m\"").unwrap();
    // 18:00: the host says 1.20 EUR now, 0.30 from 23:00.
    let s = SnapshotBuilder::at(MONDAY + 18 * HOUR)
        .queued(1, "p", Priority::Normal, 0)
        .build();
    let e = OffpeakTariff::evaluate(&cfg, &s);
    let (reason, until) = defer_reason(&e);
    assert_eq!(
        reason,
        "price 1.20 EUR/kWh until 23:00 UTC (in 5h00m), then 0.30 EUR/kWh"
    );
    assert_eq!(until, Some(MONDAY + 23 * HOUR));
    // 08:00 is the shoulder: not the lowest price, so work waits.
    let s = SnapshotBuilder::at(MONDAY + 8 * HOUR)
        .queued(1, "p", Priority::Normal, 0)
        .build();
    let (reason, _) = defer_reason(&OffpeakTariff::evaluate(&cfg, &s));
    assert!(
        reason.starts_with("price 0.60 EUR/kWh until 23:00"),
        "{reason}"
    );
    // 02:00 is cheap: it runs.
    let s = SnapshotBuilder::at(MONDAY + 2 * HOUR)
        .queued(1, "p", Priority::Normal, 0)
        .build();
    assert!(OffpeakTariff::evaluate(&cfg, &s).verdicts.is_empty());
}

#[test]
fn max_price_widens_cheap_to_the_shoulder_as_one_stretch() {
    let _t = host_tariff();
    let cfg = parse("max_price = 0.6").unwrap();
    let s = SnapshotBuilder::at(MONDAY + 8 * HOUR)
        .queued(1, "p", Priority::Normal, 0)
        .build();
    assert!(OffpeakTariff::evaluate(&cfg, &s).verdicts.is_empty());
    // At 05:00 a 3-hour task ends at 08:00, inside the shoulder: one
    // stretch from 23:00 to 09:00, so it runs.
    let s = SnapshotBuilder::at(MONDAY + 5 * HOUR)
        .queued_task(with_runtime(1, Priority::Normal, 3))
        .build();
    assert!(OffpeakTariff::evaluate(&cfg, &s).verdicts.is_empty());
    assert_eq!(
        parse("max_price = -1").unwrap_err().key.as_deref(),
        Some("max_price")
    );
}

#[test]
fn windows_in_its_config_override_the_hosts_tariff() {
    let _t = host_tariff();
    // Its own window 12:00-14:00 at 0.10: at 18:00 the next is tomorrow noon.
    let cfg = parse(
        "peak_price = 2.0\ncurrency = \"CNY\"\n[[windows]]\nstart = \"12:00\"\nend = \"14:00\"\nprice = 0.1\n",
    )
    .unwrap();
    let s = SnapshotBuilder::at(MONDAY + 18 * HOUR)
        .queued(1, "p", Priority::Normal, 0)
        .build();
    let (reason, until) = defer_reason(&OffpeakTariff::evaluate(&cfg, &s));
    assert_eq!(
        reason,
        "price 2.00 CNY/kWh until 12:00 UTC (in 18h00m), then 0.10 CNY/kWh"
    );
    assert_eq!(until, Some(MONDAY + DAY_MS + 12 * HOUR));
}

#[test]
fn with_a_flat_host_tariff_and_no_windows_it_keeps_its_old_default() {
    // No mock: the host said its tariff is flat. 23:00-07:00 at 0.40.
    let cfg = parse("").unwrap();
    let s = SnapshotBuilder::at(MONDAY + 18 * HOUR)
        .queued(1, "p", Priority::Normal, 0)
        .build();
    let (reason, _) = defer_reason(&OffpeakTariff::evaluate(&cfg, &s));
    assert_eq!(
        reason,
        "price 1.00/kWh until 23:00 UTC (in 5h00m), then 0.40/kWh"
    );
}

#[test]
fn bad_windows_are_refused_with_their_key() {
    let e = parse("[[windows]]\nstart = \"25:00\"\nend = \"07:00\"\nprice = 1.0\n").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("windows[0].start"));
    assert_eq!(
        parse("margin = \"soon\"").unwrap_err().key.as_deref(),
        Some("margin")
    );
    assert_eq!(
        parse("[[windows]]\ndays = \"fridays\"\nstart = \"01:00\"\nend = \"07:00\"\nprice = 1.0\n")
            .unwrap_err()
            .key
            .as_deref(),
        Some("windows[0].days")
    );
    assert_eq!(
        parse("[[windows]]\nstart = \"01:00\"\nend = \"01:00\"\nprice = 1.0\n")
            .unwrap_err()
            .key
            .as_deref(),
        Some("windows[0]")
    );
    assert_eq!(
        parse("windows = []").unwrap_err().key.as_deref(),
        Some("windows")
    );
    assert!(parse("").is_ok(), "defaults: 23:00-07:00");
}

#[test]
fn work_longer_than_every_cheap_window_starts_inside_one_instead_of_waiting_for_ever() {
    // The window is 8 h (23:00-07:00), margin 30 min: a 10-hour task can
    // never end inside one. Outside, it waits for the window like any task;
    // inside, even at 05:00, it is not deferred to the next one.
    let outside = SnapshotBuilder::at(MONDAY + 18 * HOUR)
        .queued_task(with_runtime(1, Priority::Normal, 10))
        .build();
    let (_, until) = defer_reason(&evaluate(outside));
    assert_eq!(until, Some(MONDAY + 23 * HOUR));
    let inside = SnapshotBuilder::at(MONDAY + 5 * HOUR)
        .queued_task(with_runtime(1, Priority::Normal, 10))
        .queued_task(with_runtime(2, Priority::Normal, 8))
        .build();
    let e = evaluate(inside);
    // The 8-hour task fits the next window (8 h + 30 min), so it waits for it.
    let deferred: Vec<i64> = e.verdicts.iter().map(|v| v.task).collect();
    assert_eq!(deferred, [2], "{e:?}");
}

#[test]
fn max_wait_bounds_how_long_a_task_is_deferred_and_wakes_the_host_at_that_moment() {
    let cfg = parse(
        "currency = \"CNY\"\npeak_price = 1.2\nmax_wait = \"6h\"\n[[windows]]\nstart = \"23:00\"\nend = \"07:00\"\nprice = 0.35\n",
    )
    .unwrap();
    let at = MONDAY + 18 * HOUR;
    // Eligible at 08:00: waited 10 h, over 6 h: not deferred. Eligible at
    // 15:00: deferred until 21:00, its limit, before the window at 23:00.
    // Eligible at 17:30: its limit (23:30) is after the window opens.
    let s = SnapshotBuilder::at(at)
        .queued_task(queued_task(1, "p", Priority::Normal, MONDAY + 8 * HOUR))
        .queued_task(queued_task(2, "p", Priority::Normal, MONDAY + 15 * HOUR))
        .queued_task(queued_task(3, "p", Priority::Normal, at - 30 * 60_000))
        .build();
    let e = OffpeakTariff::evaluate(&cfg, &s);
    let until: Vec<(i64, Option<i64>)> = e
        .verdicts
        .iter()
        .map(|v| match &v.verdict {
            Verdict::Defer(d) => (v.task, d.until),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        until,
        [(2, Some(MONDAY + 21 * HOUR)), (3, Some(MONDAY + 23 * HOUR))]
    );
}

#[test]
fn extreme_margins_and_run_times_inside_a_window_neither_overflow_nor_defer() {
    // A margin as long as a duration can be: every run time ends "in time".
    let cfg = parse(
        "margin = \"9223372036854775807ms\"\n[[windows]]\nstart = \"23:00\"\nend = \"07:00\"\nprice = 0.35\n",
    )
    .expect("the longest margin is a duration");
    let mut endless = queued_task(2, "p", Priority::Normal, 0);
    endless.estimated_runtime = Some(u64::MAX);
    let s = SnapshotBuilder::at(MONDAY + 5 * HOUR)
        .queued_task(with_runtime(1, Priority::Normal, 3))
        .queued_task(endless.clone())
        .build();
    let e = OffpeakTariff::evaluate(&cfg, &s);
    assert!(e.verdicts.is_empty(), "nothing overruns: {:?}", e.verdicts);
    // With the usual margin, a run time past every window is not held for
    // ever (no window can hold it); the 3-hour task still waits.
    let s = SnapshotBuilder::at(MONDAY + 5 * HOUR)
        .queued_task(with_runtime(1, Priority::Normal, 3))
        .queued_task(endless)
        .build();
    let e = evaluate(s);
    let deferred: Vec<i64> = e.verdicts.iter().map(|v| v.task).collect();
    assert_eq!(deferred, vec![1]);
}

#[test]
fn spans_are_worded_as_hours_and_zero_padded_minutes_or_minutes_alone() {
    let reference = |ms: i64| {
        let m = minutes(ms);
        if m >= 60 {
            format!("{}h{:02}m", m / 60, m % 60)
        } else {
            format!("{m}m")
        }
    };
    for ms in [
        -5,
        0,
        1,
        59_999,
        60_000,
        60_001,
        540_000,
        3_599_999,
        3_600_000,
        3_660_000,
        36_000_000,
        36_540_000,
        i64::MAX / 2,
        i64::MAX - 60_000,
        i64::MIN,
    ] {
        assert_eq!(span_text(ms), reference(ms), "{ms} ms");
    }
    // Past where adding 59,999 to round up would overflow: still the
    // minutes, rounded up (153,722,867,280,912 of them).
    for ms in [i64::MAX - 59_998, i64::MAX] {
        let m = (i128::from(ms) + 59_999) / 60_000;
        let want = format!("{}h{:02}m", m / 60, m % 60);
        assert_eq!((minutes(ms), span_text(ms)), (m as i64, want), "{ms} ms");
    }
    assert_eq!(span_text(3_900_000), "1h05m");
    assert_eq!(span_text(2_700_000), "45m");
}
