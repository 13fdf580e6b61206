//! `offpeak-tariff`: work waits for cheap electricity. Non-urgent work waits
//! for a cheap span; a task whose expected run time (its timeout) would run
//! past the span's end by more than `margin` waits for the next one. The
//! reason says when the next cheap span opens and what it costs. Urgent
//! tasks are never deferred by this policy.
//!
//! No task waits for ever: one that no cheap span ahead can hold (its run
//! time is longer than the longest of them plus `margin`) is not deferred
//! inside a span, so it starts in the first one it meets; and with
//! `max_wait`, a task that has been eligible that long is not deferred at
//! all (the host is asked again at that moment).
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
//! # max_wait = "1d"            # never defer a task eligible this long (default: no limit)
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
    /// A task eligible this long is not deferred (default: no limit).
    max_wait: Option<Duration>,
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
            max_wait: None,
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

/// `ms` in whole minutes, rounded up, as [`span_text`] says it (0 for
/// less; rounded without adding, so no `ms` overflows).
fn minutes(ms: i64) -> i64 {
    let ms = ms.max(0);
    ms / 60_000 + i64::from(ms % 60_000 != 0)
}

fn span_text(ms: i64) -> String {
    let mut out = String::new();
    push_span(&mut out, ms);
    out
}

/// Appends [`span_text`] of `ms` to `out` (`3h05m`, `45m`), without the
/// formatting machinery: a pass inside a window words one overrun per
/// distinct run time, and `format!` was most of the policy's time there.
fn push_span(out: &mut String, ms: i64) {
    let m = minutes(ms);
    if m >= 60 {
        push_number(out, m / 60);
        out.push('h');
        if m % 60 < 10 {
            out.push('0');
        }
        push_number(out, m % 60);
    } else {
        push_number(out, m);
    }
    out.push('m');
}

/// Appends `n` (0 or more) in decimal.
fn push_number(out: &mut String, n: i64) {
    let mut digits = [0u8; 20];
    let mut k = digits.len();
    let mut n = n.max(0).unsigned_abs();
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[k..] {
        out.push(d as char);
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

    fn check_config(cfg: &Config) -> Result<(), ConfigError> {
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
        // Up to a verdict per task: sized once.
        let mut e = Evaluation::with_capacity(s.queue.len());
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
        // A task longer than this cannot fit any cheap span ahead.
        let longest = spans
            .iter()
            .filter(|(a, _, _)| *a > s.now)
            .map(|(a, b, _)| b - a)
            .max()
            .unwrap_or(0)
            .saturating_add(cfg.margin.ms());
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
        // Inside one, a task waits if it would run past the span's end by
        // more than the margin; the reason depends on its run time only, and
        // all but the overrun is the same for every task: written once.
        let inside = match (current, next) {
            (Some((_, end, _)), Some((start, _, price))) => Some(Inside {
                end,
                start,
                end_by: end.saturating_add(cfg.margin.ms()),
                end_text: hhmm(s, end),
                next_text: format!(
                    "; next window {} (in {}) at {}",
                    hhmm(s, start),
                    span_text(start - s.now),
                    money(&currency, price)
                ),
            }),
            _ => None,
        };
        let mut overruns: BTreeMap<i64, Reason> = BTreeMap::new();
        for t in &s.queue {
            if t.priority == Priority::Urgent {
                continue;
            }
            // With max_wait: not deferred once waited that long, and asked
            // again at that moment rather than at the next window.
            let limit = cfg.max_wait.map(|w| t.eligible_at.saturating_add(w.ms()));
            if limit.is_some_and(|l| l <= s.now) {
                continue;
            }
            let until = |start: i64| Some(limit.map_or(start, |l| l.min(start)));
            match (&inside, &waiting) {
                (None, Some((reason, start))) => e.defer(t.id, reason.clone(), until(*start)),
                (Some(w), _) => {
                    let Some(runtime) = t.estimated_runtime else {
                        continue;
                    };
                    let runtime = i64::try_from(runtime).unwrap_or(i64::MAX);
                    // It ends in time, or no window ahead can hold it (this
                    // one is as good as any).
                    if s.now.saturating_add(runtime) <= w.end_by || runtime > longest {
                        continue;
                    }
                    // The reason says the overrun in minutes: tasks whose
                    // run times differ by less share one (one string each).
                    let over = s.now.saturating_add(runtime) - w.end;
                    let reason = overruns.entry(minutes(over)).or_insert_with(|| {
                        let mut text =
                            String::with_capacity(48 + w.end_text.len() + w.next_text.len());
                        text.push_str("would run ");
                        push_span(&mut text, over);
                        text.push_str(" past the cheap window's end at ");
                        text.push_str(&w.end_text);
                        text.push_str(&w.next_text);
                        Reason::from(text)
                    });
                    e.defer(t.id, reason.clone(), until(w.start));
                }
                (None, None) => {}
            }
        }
        e
    }
}

/// This pass's cheap span, when `now` is inside one and another follows.
struct Inside {
    /// When it ends.
    end: i64,
    /// When the next one starts.
    start: i64,
    /// When a run must end by, margin included.
    end_by: i64,
    /// Its end as wall time.
    end_text: String,
    /// What the reason says of the next span.
    next_text: String,
}
export_policy!(OffpeakTariff);

#[cfg(test)]
mod tests;
