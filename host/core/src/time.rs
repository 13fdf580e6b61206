//! Wall-clock helpers: the store keeps times as Unix milliseconds.

use chrono::{DateTime, Local, TimeZone, Utc};

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// `d` in milliseconds, as the store counts them: a duration past what an
/// `i64` holds (a config's "1000000000y" for "forever") is `i64::MAX`, never
/// a negative number that would put a cutoff in the future.
pub fn span_ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Unix milliseconds to a UTC time.
pub fn to_utc(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

/// A local `YYYY-MM-DD HH:MM:SS` rendering for tables.
pub fn fmt_local(ms: i64) -> String {
    to_utc(ms)
        .with_timezone(&Local)
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// The machine's time zone name as configured (`TZ`, else the system's),
/// or `UTC`; not checked against the zone database, which the client does
/// not link (its tables cost every start some 250 page faults).
pub fn local_zone_name() -> String {
    std::env::var("TZ")
        .ok()
        .filter(|t| !t.is_empty())
        .or_else(|| iana_time_zone::get_timezone().ok())
        .unwrap_or_else(|| "UTC".to_string())
}

/// A compact duration such as `4h12m`, `37s`, `1.2s`.
pub fn fmt_span(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 10_000 {
        return format!("{:.1}s", ms as f64 / 1000.0);
    }
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_past_i64_saturates() {
        let forever = std::time::Duration::from_secs(1_000_000_000 * 365 * 86_400);
        assert_eq!(span_ms(forever), i64::MAX);
        assert_eq!(span_ms(std::time::Duration::from_millis(1500)), 1500);
        assert!(now_ms().saturating_sub(span_ms(forever)) < 0);
    }
}
