//! `offpeak-tariff`: time-of-use electricity windows. Non-urgent work waits
//! for a cheap window; a task whose expected run time (its timeout) would
//! run past the window's end by more than `margin` waits for the next one.
//! The reason says when the next cheap window opens and what it costs.
//! Urgent tasks are never deferred by this policy.
//!
//! ```toml
//! [plugin.offpeak-tariff.config]
//! currency = "CNY"
//! peak_price = 1.20            # price outside every window, per kWh
//! margin = "30m"               # how far past a window's end a task may run
//! [[plugin.offpeak-tariff.config.windows]]
//! days = "all"                 # all, weekdays or weekends
//! start = "23:00"
//! end = "07:00"                # may wrap midnight
//! price = 0.35
//! [[plugin.offpeak-tariff.config.windows]]
//! days = "weekends"
//! start = "10:00"
//! end = "16:00"
//! price = 0.50
//! ```
//!
//! Times are in the daemon's time zone, at the snapshot's UTC offset.

use nightjar_sdk::time::{DAY_MS, parse_duration_ms, parse_hhmm, weekday};
use nightjar_sdk::*;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawConfig {
    currency: String,
    peak_price: f64,
    margin: String,
    windows: Vec<RawWindow>,
}

impl Default for RawConfig {
    fn default() -> Self {
        RawConfig {
            currency: String::new(),
            peak_price: 1.0,
            margin: "0m".into(),
            windows: vec![RawWindow {
                days: "all".into(),
                start: "23:00".into(),
                end: "07:00".into(),
                price: 0.4,
            }],
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWindow {
    #[serde(default = "all_days")]
    days: String,
    start: String,
    end: String,
    price: f64,
}

fn all_days() -> String {
    "all".into()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Days {
    All,
    Weekdays,
    Weekends,
}

#[derive(Debug, Clone)]
struct Window {
    days: Days,
    start: u32,
    end: u32,
    price: f64,
}

#[derive(Debug, Clone)]
struct Config {
    currency: String,
    peak_price: f64,
    margin_ms: i64,
    windows: Vec<Window>,
}

static CONFIG: ConfigSlot<Config> = ConfigSlot::new();

fn err(key: &str, message: String) -> ConfigError {
    ConfigError {
        key: Some(key.into()),
        message,
    }
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError {
        key: None,
        message: e.to_string(),
    })?;
    let margin_ms = parse_duration_ms(&raw.margin).ok_or_else(|| {
        err(
            "margin",
            format!("`{}` is not a duration like 30m", raw.margin),
        )
    })?;
    let mut windows = Vec::new();
    for (i, w) in raw.windows.iter().enumerate() {
        let key = format!("windows[{i}]");
        let days = match w.days.as_str() {
            "all" => Days::All,
            "weekdays" => Days::Weekdays,
            "weekends" => Days::Weekends,
            other => {
                return Err(err(
                    &key,
                    format!("days `{other}`: use all, weekdays or weekends"),
                ));
            }
        };
        let start = parse_hhmm(&w.start)
            .ok_or_else(|| err(&key, format!("start `{}` is not HH:MM", w.start)))?;
        let end =
            parse_hhmm(&w.end).ok_or_else(|| err(&key, format!("end `{}` is not HH:MM", w.end)))?;
        if start == end {
            return Err(err(&key, "start and end are equal".into()));
        }
        windows.push(Window {
            days,
            start,
            end,
            price: w.price,
        });
    }
    if windows.is_empty() {
        return Err(err("windows", "at least one cheap window is needed".into()));
    }
    Ok(Config {
        currency: raw.currency,
        peak_price: raw.peak_price,
        margin_ms,
        windows,
    })
}

/// A window occurrence in absolute time: (start ms, end ms, price).
type Span = (i64, i64, f64);

/// Every occurrence of every window that starts from yesterday to a week
/// ahead of `now` (yesterday's catch windows that wrap midnight).
fn spans(cfg: &Config, s: &Snapshot) -> Vec<Span> {
    let offset = s.utc_offset as i64 * 1000;
    let local_midnight = (s.now + offset).div_euclid(DAY_MS) * DAY_MS - offset;
    let today = weekday(s) as i64;
    let mut out = Vec::new();
    for d in -1..=8i64 {
        let wd = (today + d).rem_euclid(7);
        for w in &cfg.windows {
            let ok = match w.days {
                Days::All => true,
                Days::Weekdays => wd < 5,
                Days::Weekends => wd >= 5,
            };
            if !ok {
                continue;
            }
            let start = local_midnight + d * DAY_MS + w.start as i64 * 60_000;
            let mut end = local_midnight + d * DAY_MS + w.end as i64 * 60_000;
            if w.end <= w.start {
                end += DAY_MS;
            }
            out.push((start, end, w.price));
        }
    }
    out
}

fn money(cfg: &Config, price: f64) -> String {
    if cfg.currency.is_empty() {
        format!("{price:.2}/kWh")
    } else {
        format!("{price:.2} {}/kWh", cfg.currency)
    }
}

fn span_text(ms: i64) -> String {
    let m = (ms.max(0) + 59_999) / 60_000;
    if m >= 60 {
        format!("{}h{:02}m", m / 60, m % 60)
    } else {
        format!("{m}m")
    }
}

fn hhmm(s: &Snapshot, at: i64) -> String {
    let local = (at + s.utc_offset as i64 * 1000).rem_euclid(DAY_MS) / 60_000;
    format!("{:02}:{:02}", local / 60, local % 60)
}

/// The policy.
pub struct OffpeakTariff;

impl Policy for OffpeakTariff {
    fn configure(config: String) -> Result<(), ConfigError> {
        let cfg = parse(&config)?;
        CONFIG.set(cfg);
        Ok(())
    }

    fn evaluate(s: Snapshot) -> Evaluation {
        let mut e = Evaluation::default();
        let Some(cfg) = CONFIG.get() else {
            return e;
        };
        let spans = spans(&cfg, &s);
        let current = spans
            .iter()
            .filter(|(a, b, _)| *a <= s.now && s.now < *b)
            .max_by_key(|(_, b, _)| *b)
            .copied();
        let next_start = |after: i64| {
            spans
                .iter()
                .filter(|(a, _, _)| *a > after)
                .min_by_key(|(a, _, _)| *a)
                .copied()
        };
        for t in &s.queue {
            if t.priority == Priority::Urgent {
                continue;
            }
            match current {
                None => {
                    if let Some((start, _, price)) = next_start(s.now) {
                        e.defer(
                            t.id,
                            format!(
                                "price {} until {} (in {}), then {}",
                                money(&cfg, cfg.peak_price),
                                hhmm(&s, start),
                                span_text(start - s.now),
                                money(&cfg, price)
                            ),
                            Some(start),
                        );
                    }
                }
                Some((_, end, _)) => {
                    let Some(runtime) = t.estimated_runtime else {
                        continue;
                    };
                    let finish = s.now + runtime as i64;
                    if finish > end + cfg.margin_ms
                        && let Some((start, _, price)) = next_start(s.now)
                    {
                        e.defer(
                            t.id,
                            format!(
                                "would run {} past the cheap window's end at {}; next window {} (in {}) at {}",
                                span_text(finish - end),
                                hhmm(&s, end),
                                hhmm(&s, start),
                                span_text(start - s.now),
                                money(&cfg, price)
                            ),
                            Some(start),
                        );
                    }
                }
            }
        }
        e
    }
}

export_policy!(OffpeakTariff);

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_sdk::testing::{SnapshotBuilder, queued_task};

    const HOUR: i64 = 3_600_000;
    // 2026-11-30 00:00 UTC, a Monday.
    const MONDAY: i64 = 1_796_083_200_000 - DAY_MS;

    fn setup() {
        OffpeakTariff::configure(
            "currency = \"CNY\"\npeak_price = 1.2\nmargin = \"30m\"\n[[windows]]\nstart = \"23:00\"\nend = \"07:00\"\nprice = 0.35\n".into(),
        )
        .unwrap();
    }

    fn with_runtime(id: i64, priority: Priority, hours: i64) -> QueuedTask {
        let mut t = queued_task(id, "p", priority, 0);
        t.estimated_runtime = Some((hours * HOUR) as u64);
        t
    }

    #[test]
    fn outside_the_window_work_waits_with_price_and_next_opening() {
        setup();
        let s = SnapshotBuilder::at(MONDAY + 18 * HOUR + 48 * 60_000)
            .queued(1, "p", Priority::Normal, 0)
            .queued(2, "p", Priority::Urgent, 0)
            .build();
        let e = OffpeakTariff::evaluate(s);
        assert_eq!(e.verdicts.len(), 1, "urgent is never deferred");
        match &e.verdicts[0].verdict {
            Verdict::Defer(d) => {
                assert_eq!(
                    d.reason,
                    "price 1.20 CNY/kWh until 23:00 (in 4h12m), then 0.35 CNY/kWh"
                );
                assert_eq!(d.until, Some(MONDAY + 23 * HOUR));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn inside_the_window_long_work_that_would_overrun_waits_short_work_runs() {
        setup();
        // 05:00: the window ends at 07:00, margin 30 min.
        let s = SnapshotBuilder::at(MONDAY + 5 * HOUR)
            .queued_task(with_runtime(1, Priority::Normal, 1))
            .queued_task(with_runtime(2, Priority::Normal, 3))
            .build();
        let e = OffpeakTariff::evaluate(s);
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
    fn the_window_is_in_the_daemons_time_zone() {
        setup();
        // 16:00 UTC is 00:00 in UTC+8: inside the window there.
        let s = SnapshotBuilder::at(MONDAY + 16 * HOUR)
            .utc_offset(8 * 3600)
            .queued(1, "p", Priority::Normal, 0)
            .build();
        assert!(OffpeakTariff::evaluate(s).verdicts.is_empty());
    }

    #[test]
    fn bad_windows_are_refused_with_their_key() {
        let e =
            parse("[[windows]]\nstart = \"25:00\"\nend = \"07:00\"\nprice = 1.0\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("windows[0]"));
        assert!(parse("margin = \"soon\"").is_err());
        assert!(parse("").is_ok(), "defaults: 23:00-07:00");
    }
}
