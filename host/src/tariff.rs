//! The host's electricity tariff, pure: the price in force at an instant
//! and the cost of an energy series priced piecewise.
//!
//! Prices are per kWh in the tariff's currency. Windows are wall-clock
//! times in the configured zone, so `23:00-07:00` means 23:00 local time
//! on every day, DST days included (a window on a day that loses an hour is
//! an hour shorter). A window that wraps midnight belongs to the day it
//! starts on: `from = "23:00", to = "07:00", days = ["fri"]` covers Friday
//! 23:00 to Saturday 07:00. A time no window covers gets the flat `price`.

use chrono::{Datelike, TimeZone, Timelike};

/// Joules in one kWh.
pub const J_PER_KWH: f64 = 3_600_000.0;

/// One time-of-use window, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// Start, seconds after local midnight.
    pub from_s: u32,
    /// End (exclusive), seconds after local midnight; at or before `from_s`
    /// means the window wraps midnight.
    pub to_s: u32,
    /// Price per kWh.
    pub price: f64,
    /// The days it starts on, Monday first.
    pub days: [bool; 7],
    /// As written, for errors (`23:00-07:00`).
    pub label: String,
}

impl Window {
    fn wraps(&self) -> bool {
        self.to_s <= self.from_s
    }

    /// Whether the window covers local weekday `wd` (0 = Monday) at `sec`.
    fn covers(&self, wd: usize, sec: u32) -> bool {
        if self.wraps() {
            (self.days[wd] && sec >= self.from_s) || (self.days[(wd + 6) % 7] && sec < self.to_s)
        } else {
            self.days[wd] && sec >= self.from_s && sec < self.to_s
        }
    }

    /// The spans it covers in a week, seconds from Monday 00:00, as
    /// half-open ranges that may run past the week's end.
    fn week_spans(&self) -> Vec<(u32, u32)> {
        let len = if self.wraps() {
            86_400 - self.from_s + self.to_s
        } else {
            self.to_s - self.from_s
        };
        (0..7)
            .filter(|&d| self.days[d])
            .map(|d| {
                let start = d as u32 * 86_400 + self.from_s;
                (start, start + len)
            })
            .collect()
    }
}

/// A tariff: a flat price, time-of-use windows over it, a currency, a zone.
#[derive(Debug, Clone, PartialEq)]
pub struct Tariff {
    /// ISO 4217 code or any short name (`CNY`, `EUR`).
    pub currency: String,
    /// Price per kWh where no window applies.
    pub price: f64,
    /// Windows, none overlapping.
    pub windows: Vec<Window>,
    /// The zone wall times are read in.
    pub tz: chrono_tz::Tz,
}

/// Parses `HH:MM` or `HH:MM:SS` into seconds after midnight (`24:00` is
/// allowed as an end of day).
pub fn parse_time(s: &str) -> Result<u32, String> {
    let bad = || format!("`{s}` is not a time of day: write HH:MM or HH:MM:SS (24-hour)");
    let parts: Vec<&str> = s.split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.len() != 2) {
        return Err(bad());
    }
    let num = |p: &str| p.parse::<u32>().map_err(|_| bad());
    let (h, m) = (num(parts[0])?, num(parts[1])?);
    let sec = if parts.len() == 3 { num(parts[2])? } else { 0 };
    if m > 59 || sec > 59 || h > 24 || (h == 24 && (m, sec) != (0, 0)) {
        return Err(bad());
    }
    Ok(h * 3600 + m * 60 + sec)
}

/// Parses `days` entries (`all`, `weekday`, `weekend`, `mon`..`sun`) into
/// a Monday-first mask.
pub fn parse_days(days: &[String]) -> Result<[bool; 7], String> {
    const NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    let mut mask = [false; 7];
    for d in days {
        match d.to_ascii_lowercase().as_str() {
            "all" => mask = [true; 7],
            "weekday" => mask[..5].iter_mut().for_each(|m| *m = true),
            "weekend" => mask[5..].iter_mut().for_each(|m| *m = true),
            other => match NAMES.iter().position(|n| *n == other) {
                Some(i) => mask[i] = true,
                None => {
                    return Err(format!(
                        "`{d}` is not a day: use all, weekday, weekend or mon, tue, wed, thu, fri, sat, sun"
                    ));
                }
            },
        }
    }
    if !mask.contains(&true) {
        return Err("`days` is empty: name at least one day (or `all`)".into());
    }
    Ok(mask)
}

impl Tariff {
    /// A tariff after checking that no two windows overlap on any day
    /// (the error names both).
    pub fn new(
        currency: String,
        price: f64,
        windows: Vec<Window>,
        tz: chrono_tz::Tz,
    ) -> Result<Tariff, String> {
        let week = 7 * 86_400;
        for (i, a) in windows.iter().enumerate() {
            for b in &windows[i + 1..] {
                let clash = a.week_spans().iter().any(|&(a0, a1)| {
                    b.week_spans().iter().any(|&(b0, b1)| {
                        // Compare with b shifted a week either way (spans run past Sunday).
                        [0i64, week, -week].iter().any(|&s| {
                            let (b0, b1) = (b0 as i64 + s, b1 as i64 + s);
                            (a0 as i64) < b1 && b0 < a1 as i64
                        })
                    })
                });
                if clash {
                    return Err(format!(
                        "windows {} and {} overlap: a time may be in one window at most",
                        a.label, b.label
                    ));
                }
            }
        }
        Ok(Tariff {
            currency,
            price,
            windows,
            tz,
        })
    }

    /// The price per kWh in force at `at_ms` (Unix ms).
    pub fn price_at(&self, at_ms: i64) -> f64 {
        let Some(local) = self.local(at_ms) else {
            return self.price;
        };
        let wd = local.weekday().num_days_from_monday() as usize;
        let sec = local.num_seconds_from_midnight();
        self.windows
            .iter()
            .find(|w| w.covers(wd, sec))
            .map_or(self.price, |w| w.price)
    }

    /// The cost of `joules` used at `at_ms`.
    pub fn cost_of(&self, at_ms: i64, joules: f64) -> f64 {
        joules / J_PER_KWH * self.price_at(at_ms)
    }

    /// The cost of an energy series: each `(at_ms, joules)` increment priced
    /// at the price in force at its time, summed.
    pub fn cost(&self, increments: &[(i64, f64)]) -> f64 {
        increments.iter().map(|&(t, j)| self.cost_of(t, j)).sum()
    }

    /// The cost of a constant draw of `watts` from `start_ms` to `end_ms`,
    /// cut into one-second increments (each priced at its start), so a span
    /// that crosses a window's boundary is priced piecewise.
    pub fn cost_constant(&self, start_ms: i64, end_ms: i64, watts: f64) -> f64 {
        let mut t = start_ms;
        let mut cost = 0.0;
        while t < end_ms {
            let step = (end_ms - t).min(1000);
            cost += self.cost_of(t, watts * step as f64 / 1000.0);
            t += step;
        }
        cost
    }

    /// The prices from `from_ms` to `to_ms` as consecutive spans
    /// `(start, end, price)`, each at one price, adjacent spans at different
    /// prices. They cover the range exactly; a window's boundary is where
    /// its wall time falls in the zone that day (a boundary in a DST gap
    /// moves to the gap's end, as `price_at` reads it).
    pub fn spans(&self, from_ms: i64, to_ms: i64) -> Vec<(i64, i64, f64)> {
        if to_ms <= from_ms {
            return Vec::new();
        }
        let edges = match self.days_around(from_ms, to_ms) {
            Some((first, last)) => self.edges(first, last),
            None => Vec::new(),
        };
        self.cut(&edges, from_ms, to_ms)
    }

    /// The local days whose window edges can fall between `from_ms` and
    /// `to_ms`: a day either side of theirs (a window can start the day
    /// before); at the ends of the calendar there is no day either side.
    /// None when either instant has no local date chrono can hold.
    fn days_around(
        &self,
        from_ms: i64,
        to_ms: i64,
    ) -> Option<(chrono::NaiveDate, chrono::NaiveDate)> {
        let day = |ms: i64| self.local(ms).map(|t| t.date_naive());
        let (first, last) = (day(from_ms)?, day(to_ms)?);
        let one = chrono::Days::new(1);
        Some((
            first.checked_sub_days(one).unwrap_or(first),
            last.checked_add_days(one).unwrap_or(last),
        ))
    }

    /// Every window edge of the local days `first` to `last`, sorted, each
    /// once, with the price in force from it on.
    fn edges(&self, first: chrono::NaiveDate, last: chrono::NaiveDate) -> Vec<(i64, f64)> {
        let mut at = Vec::new();
        let mut d = first;
        while d <= last {
            for w in &self.windows {
                at.extend(
                    [w.from_s, w.to_s]
                        .into_iter()
                        .filter_map(|s| self.instant(d, s)),
                );
            }
            match d.checked_add_days(chrono::Days::new(1)) {
                Some(next) => d = next,
                None => break,
            }
        }
        at.sort_unstable();
        at.dedup();
        at.into_iter().map(|e| (e, self.price_at(e))).collect()
    }

    /// The spans from `from_ms` to `to_ms` (later), cut at the `edges`
    /// between them, adjacent spans at one price made one.
    fn cut(&self, edges: &[(i64, f64)], from_ms: i64, to_ms: i64) -> Vec<(i64, i64, f64)> {
        let mut out: Vec<(i64, i64, f64)> = Vec::new();
        let mut push = |a: i64, b: i64, price: f64| match out.last_mut() {
            Some(last) if last.2 == price => last.1 = b,
            _ => out.push((a, b, price)),
        };
        let inner = edges.get(edges.partition_point(|e| e.0 <= from_ms)..);
        let (mut at, mut price) = (from_ms, self.price_at(from_ms));
        for &(edge, next) in inner.unwrap_or_default().iter().take_while(|e| e.0 < to_ms) {
            push(at, edge, price);
            (at, price) = (edge, next);
        }
        push(at, to_ms, price);
        out
    }

    /// The cost of a constant draw of `watts` from `start_ms` to `end_ms`,
    /// priced exactly over the tariff's spans (no sampling).
    pub fn cost_spanned(&self, start_ms: i64, end_ms: i64, watts: f64) -> f64 {
        self.spans(start_ms, end_ms)
            .iter()
            .map(|&(a, b, p)| watts * (b - a) as f64 / 1000.0 / J_PER_KWH * p)
            .sum()
    }

    /// `ms` in the zone, when its wall time is a date chrono can hold
    /// (a day inside its calendar's ends: an offset can push the first or
    /// last day's wall time past them, and chrono panics reading it).
    fn local(&self, ms: i64) -> Option<chrono::DateTime<chrono_tz::Tz>> {
        const DAY: i64 = 86_400_000;
        let lo = chrono::DateTime::<chrono::Utc>::MIN_UTC.timestamp_millis() + DAY;
        let hi = chrono::DateTime::<chrono::Utc>::MAX_UTC.timestamp_millis() - DAY;
        if !(lo..=hi).contains(&ms) {
            return None;
        }
        self.tz.timestamp_millis_opt(ms).single()
    }

    /// The instant local day `d` reaches `sec` seconds after its midnight
    /// (`86_400` is the next midnight); in a DST gap, the gap's end.
    fn instant(&self, d: chrono::NaiveDate, sec: u32) -> Option<i64> {
        // Checked: at the calendar's last day a window's end is past it.
        let mut local = d
            .and_hms_opt(0, 0, 0)?
            .checked_add_signed(chrono::TimeDelta::seconds(sec as i64))?;
        for _ in 0..=4 {
            if let Some(t) = self.tz.from_local_datetime(&local).earliest() {
                return Some(t.timestamp_millis());
            }
            // In a gap: the first wall time after it.
            local = local.checked_add_signed(chrono::TimeDelta::minutes(30))?;
        }
        None
    }
}

#[path = "tariff_kept.rs"]
mod kept;
pub use kept::KeptSpans;

#[cfg(test)]
#[path = "tariff_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "tariff_ref_tests.rs"]
mod ref_tests;
