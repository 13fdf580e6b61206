//! The report's time arithmetic against the tariff's own and by hand.

use super::*;
use crate::report::groups::percentile;
use crate::report::series::bucket_ms;
use crate::tariff::Window;

fn berlin_tariff() -> Tariff {
    let w = |from: u32, to: u32, price: f64| Window {
        from_s: from,
        to_s: to,
        price,
        days: [true, true, true, true, true, false, false],
        label: format!("{from}-{to}"),
    };
    Tariff::new(
        "EUR".into(),
        0.3,
        vec![
            w(8 * 3600, 20 * 3600, 0.5),
            w(22 * 3600 + 1800, 6 * 3600, 0.1),
        ],
        chrono_tz::Europe::Berlin,
    )
    .unwrap()
}

#[test]
fn the_price_line_costs_any_range_as_the_tariff_prices_its_spans() {
    let t = berlin_tariff();
    // Around the spring DST change (2024-03-31), over weekdays and a weekend.
    let lo = 1_711_497_600_000; // 2024-03-27 00:00 UTC
    let hi = lo + 10 * DAY_MS;
    let line = PriceLine::new(&t, lo, hi);
    let mut x: u64 = 7;
    for _ in 0..500 {
        // A small deterministic generator: ranges from minutes to days.
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let a = lo + (x >> 20) as i64 % (9 * DAY_MS);
        let b = a + (x >> 40) as i64 % (2 * DAY_MS) + 1;
        let (ours, theirs) = (line.cost(a, b, 250.0), t.cost_spanned(a, b, 250.0));
        assert!((ours - theirs).abs() < 1e-9, "{a}..{b}: {ours} vs {theirs}");
    }
    // Outside the line's range: the tariff's own answer.
    let out = line.cost(hi - HOUR_MS, hi + HOUR_MS, 100.0);
    assert!((out - t.cost_spanned(hi - HOUR_MS, hi + HOUR_MS, 100.0)).abs() < 1e-12);
    // No time, no cost; all of a zero-length run's energy at its start's price.
    assert_eq!(line.cost(lo + 5, lo + 5, 100.0), 0.0);
    let at = lo + 12 * HOUR_MS; // Wednesday 13:00 in Berlin: 0.5
    assert!((line.cost_of_energy(at, at, J_PER_KWH) - 0.5).abs() < 1e-12);
}

#[test]
fn hour_pieces_follow_local_hours_through_dst_days() {
    let tz = chrono_tz::Europe::Berlin;
    // 2024-03-31 local day: 23 hours (02:00 does not exist).
    let start = 1_711_839_600_000; // 2024-03-30 23:00 UTC = 03-31 00:00 CET
    let mut hours = Vec::new();
    hour_pieces(tz, start, start + 23 * HOUR_MS, |h, len| {
        hours.push((h, len))
    });
    let want: Vec<usize> = (0..24).filter(|&h| h != 2).collect();
    assert_eq!(hours.iter().map(|p| p.0).collect::<Vec<_>>(), want);
    assert!(hours.iter().all(|p| p.1 == HOUR_MS));
    // A range cut mid-hour: the pieces cover it exactly.
    let mut total = 0;
    hour_pieces(tz, start + 90_000, start + 3 * HOUR_MS + 7, |_, len| {
        total += len
    });
    assert_eq!(total, 3 * HOUR_MS + 7 - 90_000);
    assert_eq!(hour_of(tz, start), 0);
    // India: a zone half an hour off UTC.
    let mut hs = Vec::new();
    hour_pieces(chrono_tz::Asia::Kolkata, 0, 2 * HOUR_MS, |h, len| {
        hs.push((h, len))
    });
    assert_eq!(hs, [(5, 1_800_000), (6, HOUR_MS), (7, 1_800_000)]);
}

#[test]
fn buckets_are_round_widths_giving_at_most_200() {
    assert_eq!(bucket_ms(0, HOUR_MS), 60_000);
    assert_eq!(bucket_ms(0, 7 * DAY_MS), HOUR_MS);
    assert_eq!(bucket_ms(0, 30 * DAY_MS), 6 * HOUR_MS);
    assert_eq!(bucket_ms(0, 200 * DAY_MS), DAY_MS);
    assert_eq!(bucket_ms(0, 201 * DAY_MS), 2 * DAY_MS);
    assert_eq!(bucket_ms(5, 5), 60_000, "an empty period");
    let century = 36_525 * DAY_MS;
    let b = bucket_ms(-century, 0);
    assert!(b % DAY_MS == 0 && (century + b - 1) / b <= 200, "{b}");
}

#[test]
fn percentiles_are_nearest_rank() {
    assert_eq!(percentile(&[], 50.0), None);
    assert_eq!(percentile(&[7], 50.0), Some(7));
    assert_eq!(percentile(&[7], 95.0), Some(7));
    assert_eq!(percentile(&[1, 2, 3, 4], 50.0), Some(2));
    assert_eq!(percentile(&[1, 2, 3, 4], 95.0), Some(4));
    let twenty: Vec<i64> = (1..=20).collect();
    assert_eq!(percentile(&twenty, 95.0), Some(19));
    assert_eq!(percentile(&twenty, 50.0), Some(10));
    let hundred: Vec<i64> = (1..=100).collect();
    assert_eq!(percentile(&hundred, 95.0), Some(95));
}
