//! Recurring schedules: cron syntax, cron's nicknames (`@daily`, `@hourly`,
//! ..., and `@reboot`: once each time the daemon starts) and the forms
//! `daily@03:00`, `hourly:15`, `weekly@mon04:00`, evaluated in the
//! configured time zone.
//!
//! Daylight-saving changes follow Vixie cron: a time that does not exist on a
//! spring-forward day fires at the moment the clock jumps (once); a time that
//! exists twice on a fall-back day fires only at its first occurrence, unless
//! the job's minute or hour field is a wildcard (`*`, `*/N`): such a job
//! follows the clock, so it also fires in the repeated hour (as `@hourly`
//! must) and its firings in the skipped hour are gone.
//! `schedule_croniter_tests` holds this to Python's croniter.

use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// A parsed, validated schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    when: When,
}

#[derive(Debug, Clone)]
enum When {
    /// Fires by the clock. `wildcard`: the minute or hour field starts with
    /// `*`, so a repeated hour on a fall-back day fires again.
    Cron {
        cron: Box<croner::Cron>,
        wildcard: bool,
    },
    /// `@reboot`: fires once each time the daemon starts, never by the clock.
    Reboot,
}

/// The nickname that means "once at daemon start".
pub const REBOOT: &str = "@reboot";

/// The accepted forms, for error messages.
const FORMS: &str = "use cron syntax (`0 3 * * *`), a nickname (`@daily`, `@hourly`, `@weekly`, `@monthly`, `@yearly`, `@reboot`) or `daily@03:00`, `hourly:15`, `weekly@mon04:00`";

/// Parses a schedule expression; the error says which forms are accepted.
pub fn parse(expr: &str) -> Result<Schedule, String> {
    if expr.trim().eq_ignore_ascii_case(REBOOT) {
        return Ok(Schedule { when: When::Reboot });
    }
    let cron_text = to_cron(expr.trim())?;
    let cron = croner::Cron::from_str(&cron_text)
        .map_err(|e| format!("schedule `{expr}` is not valid ({e}); {FORMS}"))?;
    let mut fields = cron_text.split_whitespace();
    let wildcard = fields.by_ref().take(2).any(|f| f.starts_with('*'));
    Ok(Schedule {
        when: When::Cron {
            cron: Box::new(cron),
            wildcard,
        },
    })
}

/// Whether `expr` is `@reboot` (fires at daemon start only).
pub fn is_reboot(expr: &str) -> bool {
    expr.trim().eq_ignore_ascii_case(REBOOT)
}

/// Cron's nicknames, as Vixie cron and croniter read them.
fn nickname(expr: &str) -> Option<&'static str> {
    Some(match expr.to_ascii_lowercase().as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => return None,
    })
}

fn to_cron(expr: &str) -> Result<String, String> {
    let bad = |why: &str| format!("schedule `{expr}`: {why}");
    if expr.starts_with('@') {
        return nickname(expr)
            .map(str::to_string)
            .ok_or_else(|| bad(&format!("`{expr}` is not a cron nickname; {FORMS}")));
    }
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
        return Err(bad(&format!("expected five cron fields; {FORMS}")));
    }
    Ok(expr.to_string())
}

fn hour_minute(s: &str) -> Option<(u32, u32)> {
    let (h, m) = s.split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some((h, m))
}

impl Schedule {
    /// Whether this is `@reboot`: it fires at daemon start, never by the clock.
    pub fn is_reboot(&self) -> bool {
        matches!(self.when, When::Reboot)
    }

    /// The first firing strictly after `after`, in time zone `tz`; `None`
    /// for `@reboot` and for a pattern that matches no date.
    pub fn next_after(&self, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        let When::Cron { cron, wildcard } = &self.when else {
            return None;
        };
        // From three hours of wall time before `after`: a repeated hour's
        // second occurrence can follow `after` though its wall time is
        // earlier; anything not after `after` is stepped over below.
        let mut cursor = after.with_timezone(&tz).naive_local() - Duration::hours(3);
        // Bounded: a pattern that matches nothing (30 February) gives up.
        // The earliest firing after `after` seen so far. Wall times map to
        // instants in order except for a repeated hour's second occurrence,
        // so the scan ends once a wall time's first instant is past it.
        let mut best: Option<DateTime<Utc>> = None;
        for _ in 0..2000 {
            let next = cron
                .find_next_occurrence(&cursor.and_utc(), false)
                .ok()?
                .naive_utc();
            let first = first_instant(tz, next)?;
            if best.is_some_and(|b| first >= b) {
                return best;
            }
            let at = match tz.from_local_datetime(&next) {
                LocalResult::Ambiguous(a, b) => {
                    let second = a.max(b).with_timezone(&Utc);
                    if first > after {
                        Some(first)
                    } else {
                        // Only a job that follows the clock fires again.
                        (*wildcard && second > after).then_some(second)
                    }
                }
                // A job that follows the clock loses the skipped hour's
                // firings; a fixed-time one fires at the jump.
                LocalResult::None if *wildcard => None,
                _ => (first > after).then_some(first),
            };
            if let Some(at) = at {
                best = Some(best.map_or(at, |b| b.min(at)));
            }
            cursor = next;
        }
        best
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
#[path = "schedule_croniter_tests.rs"]
mod croniter_tests;

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
    fn nicknames_become_cron_and_unknown_ones_are_named() {
        assert_eq!(to_cron("@daily").unwrap(), "0 0 * * *");
        assert_eq!(to_cron("@midnight").unwrap(), "0 0 * * *");
        assert_eq!(to_cron("@hourly").unwrap(), "0 * * * *");
        assert_eq!(to_cron("@weekly").unwrap(), "0 0 * * 0");
        assert_eq!(to_cron("@monthly").unwrap(), "0 0 1 * *");
        assert_eq!(to_cron("@yearly").unwrap(), "0 0 1 1 *");
        assert_eq!(to_cron("@annually").unwrap(), "0 0 1 1 *");
        let e = parse("@fortnightly").unwrap_err();
        assert!(e.contains("`@fortnightly` is not a cron nickname"), "{e}");
        assert!(e.contains("@reboot"), "{e}");
    }

    #[test]
    fn reboot_never_fires_by_the_clock() {
        let s = parse(" @reboot ").unwrap();
        assert!(s.is_reboot());
        assert!(is_reboot("@REBOOT"));
        assert!(!is_reboot("@daily"));
        assert!(!parse("@daily").unwrap().is_reboot());
        assert_eq!(
            s.next_after(utc("2026-11-30T12:00:00Z"), chrono_tz::UTC),
            None
        );
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
    fn hourly_fires_in_the_repeated_hour_but_a_fixed_time_once() {
        let tz: Tz = "Europe/Berlin".parse().unwrap();
        // 2026-10-25: 02:00 CEST is 00:00 UTC, 02:00 CET is 01:00 UTC.
        let hourly = parse("@hourly").unwrap();
        let after = utc("2026-10-25T00:30:00Z");
        assert_eq!(
            hourly.next_after(after, tz),
            Some(utc("2026-10-25T01:00:00Z"))
        );
        let fixed = parse("0 2 * * *").unwrap();
        assert_eq!(
            fixed.next_after(after, tz),
            Some(utc("2026-10-26T01:00:00Z"))
        );
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
