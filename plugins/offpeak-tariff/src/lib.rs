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

use nightjar_sdk::config::{Duration, TimeOfDay};
use nightjar_sdk::time::{DAY_MS, weekday};
use nightjar_sdk::*;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Config {
    currency: String,
    peak_price: f64,
    margin: Duration,
    windows: Vec<Window>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            currency: String::new(),
            peak_price: 1.0,
            margin: Duration::from_ms(0),
            windows: vec![Window {
                days: Days::All,
                start: TimeOfDay::new(23, 0).unwrap_or_default(),
                end: TimeOfDay::new(7, 0).unwrap_or_default(),
                price: 0.4,
            }],
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Window {
    #[serde(default)]
    days: Days,
    start: TimeOfDay,
    end: TimeOfDay,
    price: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Days {
    #[default]
    All,
    Weekdays,
    Weekends,
}

/// A window occurrence in absolute time: (start ms, end ms, price).
type Span = (i64, i64, f64);

/// Every occurrence of every window that starts from yesterday to a week
/// ahead of `now` (yesterday's catch windows that wrap midnight).
fn spans(cfg: &Config, s: &Snapshot<'_>) -> Vec<Span> {
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
            let (start_min, end_min) = (w.start.minute() as i64, w.end.minute() as i64);
            let start = local_midnight + d * DAY_MS + start_min * 60_000;
            let mut end = local_midnight + d * DAY_MS + end_min * 60_000;
            if end_min <= start_min {
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

/// `at` as wall time in the daemon's zone, the zone named (`23:00
/// Asia/Shanghai`): whoever reads the reason may be in another zone.
fn hhmm(s: &Snapshot<'_>, at: i64) -> String {
    let local = (at + s.utc_offset as i64 * 1000).rem_euclid(DAY_MS) / 60_000;
    format!("{:02}:{:02} {}", local / 60, local % 60, s.time_zone)
}

/// The policy.
struct OffpeakTariff;

impl Policy for OffpeakTariff {
    type Config = Config;

    fn validate(cfg: &Config) -> Result<(), ConfigError> {
        if cfg.windows.is_empty() {
            return Err(ConfigError::at(
                "windows",
                "at least one cheap window is needed; add a [[windows]] with start, end and price",
            ));
        }
        if let Some(i) = cfg.windows.iter().position(|w| w.start == w.end) {
            return Err(ConfigError::at(
                format!("windows[{i}]"),
                "start and end are equal; a window that wraps midnight ends before it starts (23:00 to 07:00)",
            ));
        }
        Ok(())
    }

    fn evaluate(cfg: &Config, s: &Snapshot) -> Evaluation {
        let mut e = Evaluation::default();
        let spans = spans(cfg, s);
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
        let next = next_start(s.now);
        // Outside a window every task waits for the same reason: written once.
        let waiting = match (current, next) {
            (None, Some((start, _, price))) => Some((
                Reason::from(format!(
                    "price {} until {} (in {}), then {}",
                    money(cfg, cfg.peak_price),
                    hhmm(s, start),
                    span_text(start - s.now),
                    money(cfg, price)
                )),
                start,
            )),
            _ => None,
        };
        // Inside one, the reason depends on the run time only: written once per run time.
        let mut overruns: BTreeMap<u64, Option<Reason>> = BTreeMap::new();
        for t in &s.queue {
            if t.priority == Priority::Urgent {
                continue;
            }
            match (current, next) {
                (None, _) => {
                    if let Some((reason, start)) = &waiting {
                        e.defer(t.id, reason.clone(), Some(*start));
                    }
                }
                (Some((_, end, _)), Some((start, _, price))) => {
                    let Some(runtime) = t.estimated_runtime else {
                        continue;
                    };
                    let reason = overruns.entry(runtime).or_insert_with(|| {
                        let finish = s
                            .now
                            .saturating_add(i64::try_from(runtime).unwrap_or(i64::MAX));
                        (finish > end + cfg.margin.ms()).then(|| {
                            Reason::from(format!(
                                "would run {} past the cheap window's end at {}; next window {} (in {}) at {}",
                                span_text(finish - end),
                                hhmm(s, end),
                                hhmm(s, start),
                                span_text(start - s.now),
                                money(cfg, price)
                            ))
                        })
                    });
                    if let Some(reason) = reason {
                        e.defer(t.id, reason.clone(), Some(start));
                    }
                }
                (Some(_), None) => {}
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

    fn parse(text: &str) -> Result<Config, ConfigError> {
        configure::<OffpeakTariff>(text)
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

    #[test]
    fn bad_windows_are_refused_with_their_key() {
        let e =
            parse("[[windows]]\nstart = \"25:00\"\nend = \"07:00\"\nprice = 1.0\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("windows[0].start"));
        assert_eq!(
            parse("margin = \"soon\"").unwrap_err().key.as_deref(),
            Some("margin")
        );
        assert_eq!(
            parse(
                "[[windows]]\ndays = \"fridays\"\nstart = \"01:00\"\nend = \"07:00\"\nprice = 1.0\n"
            )
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
}
