use std::sync::Arc;

use super::super::Tariff;
use super::super::ref_tests::Lcg;
use super::super::tests::window;
use super::KeptSpans;

const H: i64 = 3_600_000;
const DAY: i64 = 24 * H;

/// Tariffs whose edges fall in DST gaps and folds, wrap midnight, and
/// differ by weekday, in zones with whole- and half-hour shifts.
fn tariffs() -> Vec<Arc<Tariff>> {
    let zones = [
        chrono_tz::Asia::Shanghai,
        chrono_tz::America::New_York,
        chrono_tz::Europe::Berlin,
        chrono_tz::Australia::Lord_Howe,
        chrono_tz::UTC,
    ];
    let sets = [
        vec![window("23:00", "07:00", 0.35, &["all"])],
        vec![
            window("02:30", "03:30", 0.1, &["all"]),
            window("12:00", "14:00", 0.9, &["mon", "tue", "wed", "thu", "fri"]),
        ],
        vec![
            window("22:00", "06:00", 0.2, &["fri"]),
            window("00:00", "24:00", 0.3, &["sun"]),
            window("01:30", "02:15", 0.3, &["mon"]),
        ],
    ];
    let mut all = Vec::new();
    for tz in zones {
        for set in &sets {
            all.push(Arc::new(
                Tariff::new("X".into(), 1.0, set.clone(), tz).unwrap(),
            ));
        }
    }
    all
}

#[test]
fn kept_edges_answer_as_spans_does_over_a_moving_range_jumps_and_dst_days() {
    let mut rng = Lcg(7);
    // 2026-03-01 UTC: the spring DST changes of every zone here are ahead.
    let start = 1_772_323_200_000;
    for t in tariffs() {
        let mut kept = KeptSpans::default();
        let mut now = start;
        for step in 0..3_000 {
            now += match rng.below(50) {
                // Mostly as a simulation's passes move: minutes apart.
                0 => -(rng.below(30) as i64) * DAY,
                1 => rng.below(400) as i64 * DAY,
                _ => rng.below(3 * 3_600) as i64 * 1000,
            };
            let (from, to) = (now - DAY, now + rng.below(9) as i64 * DAY + 1);
            assert_eq!(
                kept.spans(&t, from, to),
                t.spans(from, to),
                "{:?} step {step}: {from}..{to}",
                t.tz
            );
        }
        assert!(kept.spans(&t, now, now).is_empty(), "an empty range");
    }
}

#[test]
fn another_tariff_is_not_answered_from_the_last_ones_edges() {
    let night = Arc::new(
        Tariff::new(
            "X".into(),
            1.0,
            vec![window("23:00", "07:00", 0.35, &["all"])],
            chrono_tz::UTC,
        )
        .unwrap(),
    );
    let noon = Arc::new(
        Tariff::new(
            "X".into(),
            1.0,
            vec![window("12:00", "13:00", 0.5, &["all"])],
            chrono_tz::UTC,
        )
        .unwrap(),
    );
    let mut kept = KeptSpans::default();
    let (from, to) = (1_772_323_200_000, 1_772_323_200_000 + 2 * DAY);
    assert_eq!(kept.spans(&night, from, to), night.spans(from, to));
    assert_eq!(kept.spans(&noon, from, to), noon.spans(from, to));
    assert_ne!(night.spans(from, to), noon.spans(from, to));
}

#[test]
fn at_the_ends_of_the_calendar_kept_edges_still_answer_as_spans() {
    for t in tariffs() {
        let mut kept = KeptSpans::default();
        for (from, to) in [
            (i64::MIN, i64::MIN + DAY),
            (i64::MAX - DAY, i64::MAX),
            (-8_334_632_851_200_000, -8_334_632_851_200_000 + 3 * DAY),
            (8_210_298_412_800_000 - 3 * DAY, 8_210_298_412_800_000),
            (0, 10 * DAY),
        ] {
            assert_eq!(kept.spans(&t, from, to), t.spans(from, to), "{from}..{to}");
        }
    }
}
