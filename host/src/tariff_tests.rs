use super::*;
use chrono::TimeZone;

pub(super) fn window(from: &str, to: &str, price: f64, days: &[&str]) -> Window {
    let days: Vec<String> = days.iter().map(|d| d.to_string()).collect();
    Window {
        from_s: parse_time(from).unwrap(),
        to_s: parse_time(to).unwrap(),
        price,
        days: parse_days(&days).unwrap(),
        label: format!("{from}-{to}"),
    }
}

fn ms(tz: chrono_tz::Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
    tz.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .single()
        .unwrap()
        .timestamp_millis()
}

const SH: chrono_tz::Tz = chrono_tz::Asia::Shanghai;

#[test]
fn times_accept_seconds_and_refuse_nonsense() {
    assert_eq!(parse_time("07:30"), Ok(7 * 3600 + 30 * 60));
    assert_eq!(parse_time("23:59:05"), Ok(23 * 3600 + 59 * 60 + 5));
    assert_eq!(parse_time("24:00"), Ok(86_400));
    for bad in ["7:30", "25:00", "12:60", "24:01", "noon", "12:00:00:00"] {
        assert!(parse_time(bad).is_err(), "{bad}");
    }
    assert!(parse_days(&["someday".into()]).is_err());
    assert!(parse_days(&[]).is_err());
    assert_eq!(
        parse_days(&["weekend".into(), "mon".into()]).unwrap(),
        [true, false, false, false, false, true, true]
    );
}

#[test]
fn a_window_wrapping_midnight_covers_both_sides_and_belongs_to_its_start_day() {
    // 2025-06-06 is a Friday.
    let t = Tariff::new(
        "CNY".into(),
        0.6,
        vec![window("23:00", "07:00", 0.3, &["fri"])],
        SH,
    )
    .unwrap();
    assert_eq!(t.price_at(ms(SH, 2025, 6, 6, 22, 59)), 0.6);
    assert_eq!(t.price_at(ms(SH, 2025, 6, 6, 23, 0)), 0.3);
    assert_eq!(
        t.price_at(ms(SH, 2025, 6, 7, 6, 59)),
        0.3,
        "Saturday morning"
    );
    assert_eq!(
        t.price_at(ms(SH, 2025, 6, 7, 7, 0)),
        0.6,
        "end is exclusive"
    );
    assert_eq!(
        t.price_at(ms(SH, 2025, 6, 6, 3, 0)),
        0.6,
        "Friday early morning belongs to Thursday's window, which is not set"
    );
    assert_eq!(
        t.price_at(ms(SH, 2025, 6, 7, 23, 30)),
        0.6,
        "Saturday night"
    );
}

#[test]
fn weekday_and_weekend_windows_price_by_day_kind() {
    let t = Tariff::new(
        "EUR".into(),
        0.5,
        vec![
            window("08:00", "20:00", 0.9, &["weekday"]),
            window("08:00", "20:00", 0.4, &["weekend"]),
        ],
        SH,
    )
    .unwrap();
    assert_eq!(t.price_at(ms(SH, 2025, 6, 6, 12, 0)), 0.9, "Friday noon");
    assert_eq!(t.price_at(ms(SH, 2025, 6, 7, 12, 0)), 0.4, "Saturday noon");
    assert_eq!(
        t.price_at(ms(SH, 2025, 6, 7, 21, 0)),
        0.5,
        "uncovered: flat"
    );
}

#[test]
fn overlapping_windows_are_refused_naming_both() {
    let e = Tariff::new(
        "CNY".into(),
        0.6,
        vec![
            window("22:00", "06:00", 0.3, &["sun"]),
            window("05:00", "09:00", 0.4, &["mon"]),
        ],
        SH,
    )
    .unwrap_err();
    assert!(
        e.contains("22:00-06:00") && e.contains("05:00-09:00"),
        "{e}"
    );
    // Touching ends do not overlap; the same hours on other days do not either.
    Tariff::new(
        "CNY".into(),
        0.6,
        vec![
            window("22:00", "06:00", 0.3, &["sun"]),
            window("06:00", "09:00", 0.4, &["mon"]),
            window("05:00", "09:00", 0.4, &["tue"]),
        ],
        SH,
    )
    .unwrap();
}

#[test]
fn a_series_crossing_a_boundary_is_priced_piecewise() {
    let t = Tariff::new(
        "CNY".into(),
        1.0,
        vec![window("23:00", "07:00", 0.25, &["all"])],
        SH,
    )
    .unwrap();
    let boundary = ms(SH, 2025, 6, 6, 23, 0);
    // 1 kWh in each of four 15-minute increments, two before and two after 23:00.
    let kwh = J_PER_KWH;
    let series: Vec<(i64, f64)> = (0..4)
        .map(|i| (boundary - 30 * 60_000 + (i + 1) * 15 * 60_000 - 1, kwh))
        .collect();
    let cost = t.cost(&series);
    assert!((cost - (1.0 + 1.0 + 0.25 + 0.25)).abs() < 1e-9, "{cost}");
    // A constant 1 kW for an hour around the boundary: half at each price.
    let c = t.cost_constant(boundary - 1_800_000, boundary + 1_800_000, 1000.0);
    assert!((c - (0.5 + 0.125)).abs() < 1e-9, "{c}");
}

#[test]
fn windows_follow_wall_time_on_a_dst_day() {
    // Berlin springs forward on 2025-03-30 at 02:00 -> 03:00: a 01:00-04:00
    // window lasts two real hours that day, not three.
    let tz = chrono_tz::Europe::Berlin;
    let t = Tariff::new(
        "EUR".into(),
        1.0,
        vec![window("01:00", "04:00", 0.5, &["all"])],
        tz,
    )
    .unwrap();
    let start = ms(tz, 2025, 3, 30, 0, 0);
    let end = ms(tz, 2025, 3, 30, 6, 0);
    assert_eq!(end - start, 5 * 3_600_000, "the day lost an hour");
    // 1 kW from 00:00 to 06:00 local: 5 real hours, 2 in the window.
    let c = t.cost_constant(start, end, 1000.0);
    assert!((c - (3.0 * 1.0 + 2.0 * 0.5)).abs() < 1e-9, "{c}");
    assert_eq!(t.price_at(ms(tz, 2025, 3, 30, 3, 30)), 0.5);
    assert_eq!(t.price_at(ms(tz, 2025, 3, 30, 4, 0)), 1.0);
}

#[test]
fn spans_cover_the_range_at_each_price_and_agree_with_price_at() {
    let t = Tariff::new(
        "CNY".into(),
        0.6,
        vec![
            window("23:00", "07:00", 0.3, &["all"]),
            window("10:00", "16:00", 0.5, &["weekend"]),
        ],
        SH,
    )
    .unwrap();
    // Friday 2026-11-27 20:00 to Sunday 2026-11-29 12:00, Shanghai.
    let from = ms(SH, 2026, 11, 27, 20, 0);
    let to = ms(SH, 2026, 11, 29, 12, 0);
    let spans = t.spans(from, to);
    let want = [
        (
            ms(SH, 2026, 11, 27, 20, 0),
            ms(SH, 2026, 11, 27, 23, 0),
            0.6,
        ),
        (ms(SH, 2026, 11, 27, 23, 0), ms(SH, 2026, 11, 28, 7, 0), 0.3),
        (ms(SH, 2026, 11, 28, 7, 0), ms(SH, 2026, 11, 28, 10, 0), 0.6),
        (
            ms(SH, 2026, 11, 28, 10, 0),
            ms(SH, 2026, 11, 28, 16, 0),
            0.5,
        ),
        (
            ms(SH, 2026, 11, 28, 16, 0),
            ms(SH, 2026, 11, 28, 23, 0),
            0.6,
        ),
        (ms(SH, 2026, 11, 28, 23, 0), ms(SH, 2026, 11, 29, 7, 0), 0.3),
        (ms(SH, 2026, 11, 29, 7, 0), ms(SH, 2026, 11, 29, 10, 0), 0.6),
        (ms(SH, 2026, 11, 29, 10, 0), to, 0.5),
    ];
    assert_eq!(spans, want);
    for &(a, b, p) in &spans {
        assert_eq!(t.price_at(a), p);
        assert_eq!(t.price_at(b - 1), p);
    }
    // 1 kW for the whole range, priced exactly, equals the one-second sum.
    let exact = t.cost_spanned(from, to, 1000.0);
    let sampled = t.cost_constant(from, to, 1000.0);
    assert!((exact - sampled).abs() < 1e-9, "{exact} {sampled}");
    assert!(t.spans(to, from).is_empty());
}

#[test]
fn spans_follow_a_dst_day_and_a_flat_tariff_is_one_span() {
    let ny = chrono_tz::America::New_York;
    let t = Tariff::new(
        "USD".into(),
        0.2,
        vec![window("01:00", "05:00", 0.1, &["all"])],
        ny,
    )
    .unwrap();
    // 2026-03-08: clocks go from 02:00 to 03:00; the window is 3 hours long.
    let from = ms(ny, 2026, 3, 8, 0, 0);
    let to = ms(ny, 2026, 3, 8, 12, 0);
    let spans = t.spans(from, to);
    assert_eq!(spans.len(), 3, "{spans:?}");
    assert_eq!(spans[1].1 - spans[1].0, 3 * 3_600_000);
    let flat = Tariff::new("USD".into(), 0.2, vec![], ny).unwrap();
    assert_eq!(flat.spans(from, to), vec![(from, to, 0.2)]);
}

#[test]
fn spans_at_the_ends_of_time_answer_without_panicking() {
    // What a hostile policy may ask through the `tariff` import.
    let t = Tariff::new(
        "CNY".into(),
        0.6,
        vec![window("23:00", "07:00", 0.3, &["all"])],
        SH,
    )
    .unwrap();
    let day = 86_400_000;
    for (a, b) in [
        (i64::MIN, i64::MIN + 14 * day),
        (i64::MAX - 14 * day, i64::MAX),
        (-14 * day, 0),
    ] {
        let spans = t.spans(a, b);
        assert_eq!(spans.first().map(|s| s.0), Some(a));
        assert_eq!(spans.last().map(|s| s.1), Some(b));
        assert!(spans.windows(2).all(|w| w[0].1 == w[1].0), "consecutive");
    }
    assert!(t.spans(5, 5).is_empty());
}

#[test]
fn spans_at_the_calendars_first_and_last_days_never_panic_and_cover_the_range() {
    // chrono's first and last representable days (where a day before or
    // after, or a window's end past midnight, does not exist).
    let t = Tariff::new(
        "EUR".into(),
        1.0,
        vec![
            window("23:00", "06:00", 0.5, &["all"]),
            window("12:00", "13:00", 2.0, &["weekend"]),
        ],
        chrono_tz::Europe::Berlin,
    )
    .unwrap();
    let day = 86_400_000i64;
    let lo = chrono::NaiveDate::MIN
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc()
        .timestamp_millis();
    let hi = chrono::NaiveDate::MAX
        .and_hms_opt(23, 59, 59)
        .unwrap()
        .and_utc()
        .timestamp_millis();
    let mut starts = vec![
        i64::MIN,
        i64::MIN + 1,
        -1,
        0,
        i64::MAX - 14 * day,
        i64::MAX - 1,
    ];
    for edge in [lo, hi] {
        for off in [-3 * day, -day, -1, 0, 1, day] {
            starts.push(edge.saturating_add(off));
        }
    }
    for from in starts {
        for len in [1, day, 14 * day, i64::MAX] {
            let to = from.saturating_add(len);
            let spans = t.spans(from, to);
            if to > from {
                assert_eq!(spans.first().map(|s| s.0), Some(from), "{from}..{to}");
                assert_eq!(spans.last().map(|s| s.1), Some(to), "{from}..{to}");
                assert!(spans.windows(2).all(|w| w[0].1 == w[1].0), "{from}..{to}");
            }
            let _ = t.price_at(from);
        }
    }
}
