//! Time helpers that read only the snapshot's clock (policies are pure).

use crate::Snapshot;

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// `now` in the snapshot's zone, in ms: saturated at the ends of `i64`
/// rather than overflowing (a snapshot given to `plugins test` may say any
/// `now`).
fn local_ms(s: &Snapshot<'_>) -> i64 {
    s.now.saturating_add(i64::from(s.utc_offset) * 1000)
}

/// Local time of day at `now`, in minutes after midnight, in the daemon's zone.
pub fn minute_of_day(s: &Snapshot<'_>) -> u32 {
    let local = local_ms(s);
    (local.rem_euclid(DAY_MS) / 60_000) as u32
}

/// Local weekday at `now`: 0 = Monday ... 6 = Sunday.
pub fn weekday(s: &Snapshot<'_>) -> u32 {
    let local = local_ms(s);
    // 1970-01-01 was a Thursday (3).
    ((local.div_euclid(DAY_MS) + 3).rem_euclid(7)) as u32
}

/// Saturday or Sunday in the daemon's zone.
pub fn is_weekend(s: &Snapshot<'_>) -> bool {
    weekday(s) >= 5
}

/// Parses `HH:MM` into minutes after midnight.
pub fn parse_hhmm(text: &str) -> Option<u32> {
    let (h, m) = text.split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

/// Whether `minute` lies in the window `[start, end)`, which may wrap midnight.
pub fn in_window(minute: u32, start: u32, end: u32) -> bool {
    if start <= end {
        minute >= start && minute < end
    } else {
        minute >= start || minute < end
    }
}

/// Parses durations such as `30s`, `5m`, `2h`, `1d` into milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = text.split_at(split);
    let n: i64 = n.parse().ok()?;
    let mult = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => DAY_MS,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// Parses sizes such as `512MiB`, `80GiB`, `16GB` into bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (n, unit) = text.split_at(split);
    let n: u64 = n.parse().ok()?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SnapshotBuilder;

    #[test]
    fn weekday_and_minute_follow_the_offset() {
        // 2026-11-30T23:30Z is a Monday; at UTC+8 it is Tuesday 07:30.
        let s = SnapshotBuilder::at(1_796_081_400_000)
            .utc_offset(8 * 3600)
            .build();
        assert_eq!(weekday(&s), 1);
        assert_eq!(minute_of_day(&s), 7 * 60 + 30);
    }

    #[test]
    fn a_clock_at_the_ends_of_time_does_not_panic() {
        // `plugins test` takes any snapshot a person writes: `now` may be
        // anything an i64 holds, and the offset either way from it.
        for (now, offset) in [(i64::MAX, 14 * 3600), (i64::MIN, -12 * 3600)] {
            let s = SnapshotBuilder::at(now).utc_offset(offset).build();
            assert!(weekday(&s) < 7);
            assert!(minute_of_day(&s) < 24 * 60);
        }
    }

    #[test]
    fn windows_wrap_midnight() {
        let (start, end) = (parse_hhmm("23:00").unwrap(), parse_hhmm("07:00").unwrap());
        assert!(in_window(parse_hhmm("02:00").unwrap(), start, end));
        assert!(!in_window(parse_hhmm("12:00").unwrap(), start, end));
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration_ms("2h"), Some(7_200_000));
        assert_eq!(parse_size("80GiB"), Some(80 << 30));
        assert_eq!(parse_duration_ms("2 fortnights"), None);
    }
}
