//! Wall-clock helpers: the store keeps times as Unix milliseconds.

use chrono::{DateTime, Local, TimeZone, Utc};

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
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

/// The machine's time zone name (`TZ`, else the system's), or `UTC`.
pub fn local_zone() -> String {
    if let Ok(tz) = std::env::var("TZ")
        && tz.parse::<chrono_tz::Tz>().is_ok()
    {
        return tz;
    }
    iana_time_zone::get_timezone()
        .ok()
        .filter(|t| t.parse::<chrono_tz::Tz>().is_ok())
        .unwrap_or_else(|| "UTC".to_string())
}

/// `ms` as wall time in zone `tz` with the zone named (`03:00 Asia/Shanghai`),
/// for a time read in a zone other than the local one; `None` when `tz` is
/// the local zone (or not a zone), where the local rendering says it all.
pub fn fmt_in_zone(ms: i64, tz: &str) -> Option<String> {
    let zone: chrono_tz::Tz = tz.parse().ok()?;
    if tz == local_zone() {
        return None;
    }
    Some(format!(
        "{} {tz}",
        to_utc(ms).with_timezone(&zone).format("%Y-%m-%d %H:%M")
    ))
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
    fn a_time_in_another_zone_names_the_zone() {
        // 2026-12-01 03:00 in Shanghai is 2026-11-30 19:00 UTC.
        let ms = 1_796_065_200_000;
        let other = if local_zone() == "Asia/Shanghai" {
            "Europe/Berlin"
        } else {
            "Asia/Shanghai"
        };
        let shown = fmt_in_zone(ms, other).expect("another zone is named");
        assert!(shown.ends_with(other), "{shown}");
        if other == "Asia/Shanghai" {
            assert_eq!(shown, "2026-12-01 03:00 Asia/Shanghai");
        }
        assert_eq!(
            fmt_in_zone(ms, &local_zone()),
            None,
            "the local zone needs no label"
        );
        assert_eq!(fmt_in_zone(ms, "Mars/Olympus"), None);
    }
}
