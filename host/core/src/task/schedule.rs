//! Recurring schedules: cron syntax and the forms `daily@03:00`, `hourly:15`,
//! `weekly@mon04:00`, evaluated in the configured time zone.
//!
//! Daylight-saving changes follow Vixie cron: a time that does not exist on a
//! spring-forward day fires at the moment the clock jumps (once); a time that
//! exists twice on a fall-back day fires only at its first occurrence.

use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// A parsed, validated schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: croner::Cron,
}

/// Parses a schedule expression; the error says which forms are accepted.
pub fn parse(expr: &str) -> Result<Schedule, String> {
    let cron_text = to_cron(expr.trim())?;
    let cron = croner::Cron::from_str(&cron_text).map_err(|e| {
        format!(
            "schedule `{expr}` is not valid ({e}); use cron syntax (`0 3 * * *`) or `daily@03:00`, `hourly:15`, `weekly@mon04:00`"
        )
    })?;
    Ok(Schedule { cron })
}

fn to_cron(expr: &str) -> Result<String, String> {
    let bad = |why: &str| format!("schedule `{expr}`: {why}");
    if let Some(hm) = expr.strip_prefix("daily@") {
        let (h, m) = hour_minute(hm).ok_or_else(|| bad("expected `daily@HH:MM`"))?;
        return Ok(format!("{m} {h} * * *"));
    }
    if let Some(m) = expr.strip_prefix("hourly:") {
        let m: u32 = m
            .parse()
            .ok()
            .filter(|m| *m < 60)
            .ok_or_else(|| bad("expected `hourly:MM` with MM 0-59"))?;
        return Ok(format!("{m} * * * *"));
    }
    if let Some(rest) = expr.strip_prefix("weekly@") {
        const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
        let day = rest.get(..3).map(str::to_ascii_lowercase);
        let dow = day
            .as_deref()
            .and_then(|d| DAYS.iter().position(|x| *x == d))
            .ok_or_else(|| bad("expected `weekly@DDDHH:MM` with DDD one of mon..sun"))?;
        let (h, m) = hour_minute(&rest[3..]).ok_or_else(|| bad("expected `weekly@mon04:00`"))?;
        return Ok(format!("{m} {h} * * {dow}"));
    }
    if expr.split_whitespace().count() != 5 {
        return Err(bad(
            "use five cron fields (`0 3 * * *`) or `daily@03:00`, `hourly:15`, `weekly@mon04:00`",
        ));
    }
    Ok(expr.to_string())
}

fn hour_minute(s: &str) -> Option<(u32, u32)> {
    let (h, m) = s.split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some((h, m))
}

impl Schedule {
    /// The first firing strictly after `after`, in time zone `tz`.
    pub fn next_after(&self, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        let mut cursor = after.with_timezone(&tz).naive_local();
        // Bounded: a pattern that matches nothing (30 February) gives up.
        for _ in 0..1000 {
            let next = self
                .cron
                .find_next_occurrence(&cursor.and_utc(), false)
                .ok()?
                .naive_utc();
            let at = first_instant(tz, next)?;
            if at > after {
                return Some(at);
            }
            cursor = next;
        }
        None
    }
}

/// The first instant at which the local wall time `t` is reached: the earlier
/// of two on a fall-back day, the end of the gap on a spring-forward day.
fn first_instant(tz: Tz, t: NaiveDateTime) -> Option<DateTime<Utc>> {
    match tz.from_local_datetime(&t) {
        LocalResult::Single(d) => Some(d.with_timezone(&Utc)),
        LocalResult::Ambiguous(a, b) => Some(a.min(b).with_timezone(&Utc)),
        LocalResult::None => (1..=24 * 60).find_map(|m| {
            match tz.from_local_datetime(&(t + Duration::minutes(m))) {
                LocalResult::None => None,
                r => r.earliest().map(|d| {
                    // The gap ends at a whole minute; fire at its end.
                    d.with_timezone(&Utc)
                }),
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn shorthand_forms_become_cron() {
        assert_eq!(to_cron("daily@03:00").unwrap(), "0 3 * * *");
        assert_eq!(to_cron("hourly:15").unwrap(), "15 * * * *");
        assert_eq!(to_cron("weekly@mon04:00").unwrap(), "0 4 * * 1");
        assert!(parse("daily@25:00").is_err());
        assert!(parse("weekly@xyz04:00").is_err());
        assert!(parse("every tuesday").is_err());
    }

    #[test]
    fn daily_fires_in_the_configured_zone() {
        let s = parse("daily@03:00").unwrap();
        let tz: Tz = "Asia/Shanghai".parse().unwrap();
        // 03:00 in Shanghai is 19:00 UTC the day before.
        let next = s.next_after(utc("2026-11-30T12:00:00Z"), tz).unwrap();
        assert_eq!(next, utc("2026-11-30T19:00:00Z"));
    }

    #[test]
    fn spring_forward_gap_fires_once_at_the_jump() {
        let s = parse("daily@02:30").unwrap();
        let tz: Tz = "Europe/Berlin".parse().unwrap();
        // 2026-03-29: clocks jump from 02:00 CET to 03:00 CEST (01:00 UTC).
        let first = s.next_after(utc("2026-03-28T12:00:00Z"), tz).unwrap();
        assert_eq!(first, utc("2026-03-29T01:00:00Z"));
        let second = s.next_after(first, tz).unwrap();
        assert_eq!(second, utc("2026-03-30T00:30:00Z"));
    }

    #[test]
    fn fall_back_repeated_hour_fires_once() {
        let s = parse("daily@02:30").unwrap();
        let tz: Tz = "Europe/Berlin".parse().unwrap();
        // 2026-10-25: 02:30 happens at 00:30 UTC (CEST) and again at 01:30 UTC (CET).
        let first = s.next_after(utc("2026-10-24T12:00:00Z"), tz).unwrap();
        assert_eq!(first, utc("2026-10-25T00:30:00Z"));
        let second = s.next_after(first, tz).unwrap();
        assert_eq!(second, utc("2026-10-26T01:30:00Z"));
    }

    #[test]
    fn weekly_lands_on_the_named_day() {
        let s = parse("weekly@mon04:00").unwrap();
        // 2026-11-30 is a Monday.
        let next = s
            .next_after(utc("2026-11-30T05:00:00Z"), chrono_tz::UTC)
            .unwrap();
        assert_eq!(next, utc("2026-12-07T04:00:00Z"));
    }
}
