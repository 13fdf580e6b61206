//! `offpeak-tariff`: work waits for cheap electricity. Non-urgent work waits
//! for a cheap span; a task whose expected run time (its timeout) would run
//! past the span's end by more than `margin` waits for the next one. The
//! reason says when the next cheap span opens and what it costs. Urgent
//! tasks are never deferred by this policy.
//!
//! The prices are the daemon's own tariff (`[tariff]` in the daemon config,
//! read through the contract's `tariff` import), the same one each run's
//! cost is priced with. A span is cheap when its price is at most
//! `max_price`, or, without it, when it is the lowest price of the coming
//! week. With no time-of-use windows in `[tariff]` (a flat price) no hour
//! is cheaper than another, and the policy falls back to its own windows:
//!
//! ```toml
//! [plugin.offpeak-tariff.config]
//! margin = "30m"               # how far past a span's end a task may run
//! # max_price = 0.50           # cheap: at most this (default: the week's lowest)
//! # Override for compatibility (older configs): when `windows` is given,
//! # the policy uses these windows and `peak_price` instead of [tariff].
//! # currency = "CNY"
//! # peak_price = 1.20          # price outside every window, per kWh
//! # [[plugin.offpeak-tariff.config.windows]]
//! # days = "all"               # all, weekdays or weekends
//! # start = "23:00"
//! # end = "07:00"              # may wrap midnight
//! # price = 0.35
//! ```
//!
//! Without `windows` and without a time-of-use `[tariff]`, the windows are
//! `23:00` to `07:00` every day at 0.40 (peak 1.00), as before 0.3. Times
//! are in the daemon's time zone, at the snapshot's UTC offset.

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
    /// Cheap means at most this (host tariff only); default: the lowest.
    max_price: Option<f64>,
    /// Windows of the policy's own; given, they override the host's tariff.
    windows: Option<Vec<Window>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            currency: String::new(),
            peak_price: 1.0,
            margin: Duration::from_ms(0),
            max_price: None,
            windows: None,
        }
    }
}

/// The windows used when neither the config nor the host's tariff has any.
fn fallback_windows() -> Vec<Window> {
    vec![Window {
        days: Days::All,
        start: TimeOfDay::new(23, 0).unwrap_or_default(),
        end: TimeOfDay::new(7, 0).unwrap_or_default(),
        price: 0.4,
    }]
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
fn window_spans(windows: &[Window], s: &Snapshot<'_>) -> Vec<Span> {
    let offset = s.utc_offset as i64 * 1000;
    let local_midnight = (s.now + offset).div_euclid(DAY_MS) * DAY_MS - offset;
    let today = weekday(s) as i64;
    let mut out = Vec::new();
    for d in -1..=8i64 {
        let wd = (today + d).rem_euclid(7);
        for w in windows {
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

/// What this pass prices by: the cheap spans, the price outside them at
/// `now`, and the currency.
struct Prices {
    cheap: Vec<Span>,
    outside: f64,
    currency: String,
}

/// How far ahead the host's tariff is read.
const AHEAD_MS: i64 = 8 * DAY_MS;

/// The cheap spans from the config's windows, else the host's tariff, else
/// the fallback windows.
fn prices(cfg: &Config, s: &Snapshot<'_>) -> Prices {
    let own = |windows: &[Window]| Prices {
        cheap: window_spans(windows, s),
        outside: cfg.peak_price,
        currency: cfg.currency.clone(),
    };
    if let Some(windows) = &cfg.windows {
        return own(windows);
    }
    let Some(schedule) =
        tariff::prices(s.now.saturating_sub(DAY_MS), s.now.saturating_add(AHEAD_MS))
    else {
        return own(&fallback_windows());
    };
    let ahead = schedule.spans.iter().filter(|p| p.end > s.now);
    let lowest = ahead.map(|p| p.price).reduce(f64::min).unwrap_or(0.0);
    let limit = cfg.max_price.unwrap_or(lowest);
    let mut cheap: Vec<Span> = Vec::new();
    for p in schedule.spans.iter().filter(|p| p.price <= limit) {
        match cheap.last_mut() {
            // Adjacent cheap spans are one stretch, at its first price.
            Some(last) if last.1 == p.start => last.1 = p.end,
            _ => cheap.push((p.start, p.end, p.price)),
        }
    }
    Prices {
        cheap,
        outside: schedule.price_at(s.now).unwrap_or(cfg.peak_price),
        currency: schedule.currency,
    }
}

fn money(currency: &str, price: f64) -> String {
    if currency.is_empty() {
        format!("{price:.2}/kWh")
    } else {
        format!("{price:.2} {currency}/kWh")
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
        if let Some(p) = cfg.max_price
            && !(p.is_finite() && p >= 0.0)
        {
            return Err(ConfigError::at(
                "max_price",
                "must be a price per kWh, 0 or more",
            ));
        }
        let Some(windows) = &cfg.windows else {
            return Ok(());
        };
        if windows.is_empty() {
            return Err(ConfigError::at(
                "windows",
                "at least one cheap window is needed; add a [[windows]] with start, end and price",
            ));
        }
        if let Some(i) = windows.iter().position(|w| w.start == w.end) {
            return Err(ConfigError::at(
                format!("windows[{i}]"),
                "start and end are equal; a window that wraps midnight ends before it starts (23:00 to 07:00)",
            ));
        }
        Ok(())
    }

    fn evaluate(cfg: &Config, s: &Snapshot) -> Evaluation {
        let mut e = Evaluation::default();
        let Prices {
            cheap: spans,
            outside,
            currency,
        } = prices(cfg, s);
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
                    money(&currency, outside),
                    hhmm(s, start),
                    span_text(start - s.now),
                    money(&currency, price)
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
                                money(&currency, price)
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

    /// The host's tariff: 1.20 by day, 0.30 from 23:00 to 07:00, and a
    /// 0.60 shoulder from 07:00 to 09:00 (Monday, UTC).
    fn host_tariff() -> nightjar_sdk::tariff::TariffMock {
        use nightjar_sdk::tariff::{PriceSpan, Schedule, TariffMock};
        let mut spans = Vec::new();
        for d in -1..9 {
            let day = MONDAY + d * DAY_MS;
            spans.push(PriceSpan {
                start: day - HOUR,
                end: day + 7 * HOUR,
                price: 0.3,
            });
            spans.push(PriceSpan {
                start: day + 7 * HOUR,
                end: day + 9 * HOUR,
                price: 0.6,
            });
            spans.push(PriceSpan {
                start: day + 9 * HOUR,
                end: day + 23 * HOUR,
                price: 1.2,
            });
        }
        TariffMock::install(Schedule {
            currency: "EUR".into(),
            spans,
        })
    }

    fn defer_reason(e: &Evaluation) -> (String, Option<i64>) {
        match &e.verdicts[0].verdict {
            Verdict::Defer(d) => (d.reason.to_string(), d.until),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn without_windows_of_its_own_the_hosts_tariff_decides() {
        let _t = host_tariff();
        let cfg = parse("margin = \"30m\"").unwrap();
        // 18:00: the host says 1.20 EUR now, 0.30 from 23:00.
        let s = SnapshotBuilder::at(MONDAY + 18 * HOUR)
            .queued(1, "p", Priority::Normal, 0)
            .build();
        let e = OffpeakTariff::evaluate(&cfg, &s);
        let (reason, until) = defer_reason(&e);
        assert_eq!(
            reason,
            "price 1.20 EUR/kWh until 23:00 UTC (in 5h00m), then 0.30 EUR/kWh"
        );
        assert_eq!(until, Some(MONDAY + 23 * HOUR));
        // 08:00 is the shoulder: not the lowest price, so work waits.
        let s = SnapshotBuilder::at(MONDAY + 8 * HOUR)
            .queued(1, "p", Priority::Normal, 0)
            .build();
        let (reason, _) = defer_reason(&OffpeakTariff::evaluate(&cfg, &s));
        assert!(
            reason.starts_with("price 0.60 EUR/kWh until 23:00"),
            "{reason}"
        );
        // 02:00 is cheap: it runs.
        let s = SnapshotBuilder::at(MONDAY + 2 * HOUR)
            .queued(1, "p", Priority::Normal, 0)
            .build();
        assert!(OffpeakTariff::evaluate(&cfg, &s).verdicts.is_empty());
    }

    #[test]
    fn max_price_widens_cheap_to_the_shoulder_as_one_stretch() {
        let _t = host_tariff();
        let cfg = parse("max_price = 0.6").unwrap();
        let s = SnapshotBuilder::at(MONDAY + 8 * HOUR)
            .queued(1, "p", Priority::Normal, 0)
            .build();
        assert!(OffpeakTariff::evaluate(&cfg, &s).verdicts.is_empty());
        // At 05:00 a 3-hour task ends at 08:00, inside the shoulder: one
        // stretch from 23:00 to 09:00, so it runs.
        let s = SnapshotBuilder::at(MONDAY + 5 * HOUR)
            .queued_task(with_runtime(1, Priority::Normal, 3))
            .build();
        assert!(OffpeakTariff::evaluate(&cfg, &s).verdicts.is_empty());
        assert_eq!(
            parse("max_price = -1").unwrap_err().key.as_deref(),
            Some("max_price")
        );
    }

    #[test]
    fn windows_in_its_config_override_the_hosts_tariff() {
        let _t = host_tariff();
        // Its own window 12:00-14:00 at 0.10: at 18:00 the next is tomorrow noon.
        let cfg = parse(
            "peak_price = 2.0\ncurrency = \"CNY\"\n[[windows]]\nstart = \"12:00\"\nend = \"14:00\"\nprice = 0.1\n",
        )
        .unwrap();
        let s = SnapshotBuilder::at(MONDAY + 18 * HOUR)
            .queued(1, "p", Priority::Normal, 0)
            .build();
        let (reason, until) = defer_reason(&OffpeakTariff::evaluate(&cfg, &s));
        assert_eq!(
            reason,
            "price 2.00 CNY/kWh until 12:00 UTC (in 18h00m), then 0.10 CNY/kWh"
        );
        assert_eq!(until, Some(MONDAY + DAY_MS + 12 * HOUR));
    }

    #[test]
    fn with_a_flat_host_tariff_and_no_windows_it_keeps_its_old_default() {
        // No mock: the host said its tariff is flat. 23:00-07:00 at 0.40.
        let cfg = parse("").unwrap();
        let s = SnapshotBuilder::at(MONDAY + 18 * HOUR)
            .queued(1, "p", Priority::Normal, 0)
            .build();
        let (reason, _) = defer_reason(&OffpeakTariff::evaluate(&cfg, &s));
        assert_eq!(
            reason,
            "price 1.00/kWh until 23:00 UTC (in 5h00m), then 0.40/kWh"
        );
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
