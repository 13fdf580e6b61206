//! Time arithmetic of the report: the tariff's price integrated over any
//! range in O(log n), and a range cut at the zone's local hours.

use chrono::{Offset, TimeZone};

use crate::tariff::{J_PER_KWH, Tariff};

/// Milliseconds in an hour.
pub const HOUR_MS: i64 = 3_600_000;
/// Milliseconds in a day.
pub const DAY_MS: i64 = 24 * HOUR_MS;

/// The tariff's prices over `[lo, hi)` as spans with running integrals, so
/// the cost of a constant draw over any range inside is two binary searches
/// (the same value as `Tariff::cost_spanned`, which walks the days each
/// time). A range outside `[lo, hi)` falls back to `cost_spanned`.
pub struct PriceLine<'a> {
    tariff: &'a Tariff,
    /// `(start, price)` of each span, ascending; the last span ends at `hi`.
    spans: Vec<(i64, f64)>,
    /// `cum[i]`: the integral of price over ms from `lo` to `spans[i].0`.
    cum: Vec<f64>,
    lo: i64,
    hi: i64,
}

impl<'a> PriceLine<'a> {
    /// The prices of `tariff` over `[lo, hi)`.
    pub fn new(tariff: &'a Tariff, lo: i64, hi: i64) -> PriceLine<'a> {
        let raw = tariff.spans(lo, hi);
        let mut cum = Vec::with_capacity(raw.len());
        let mut acc = 0.0;
        for &(a, b, p) in &raw {
            cum.push(acc);
            acc += p * (b - a) as f64;
        }
        PriceLine {
            tariff,
            spans: raw.iter().map(|&(a, _, p)| (a, p)).collect(),
            cum,
            lo,
            hi,
        }
    }

    /// The integral of price over ms from `lo` to `x` (`lo <= x <= hi`).
    fn upto(&self, x: i64) -> f64 {
        let i = self.spans.partition_point(|s| s.0 <= x);
        match i.checked_sub(1) {
            Some(i) => self.cum[i] + self.spans[i].1 * (x - self.spans[i].0) as f64,
            None => 0.0,
        }
    }

    /// The cost of a constant draw of `watts` from `a` to `b`, priced
    /// exactly at the tariff's spans.
    pub fn cost(&self, a: i64, b: i64, watts: f64) -> f64 {
        if b <= a {
            return 0.0;
        }
        if a < self.lo || b > self.hi {
            return self.tariff.cost_spanned(a, b, watts);
        }
        watts * (self.upto(b) - self.upto(a)) / 1000.0 / J_PER_KWH
    }

    /// The cost of `joules` used over `[a, b)` at a constant rate (all of
    /// it at `a`'s price when the range is empty).
    pub fn cost_of_energy(&self, a: i64, b: i64, joules: f64) -> f64 {
        if b <= a {
            return self.tariff.cost_of(a, joules);
        }
        self.cost(a, b, joules / ((b - a) as f64 / 1000.0))
    }
}

/// The zone's offset from UTC at `t` (Unix ms), in ms (0 out of range).
fn offset_ms(tz: chrono_tz::Tz, t: i64) -> i64 {
    chrono::DateTime::from_timestamp_millis(t).map_or(0, |d| {
        tz.offset_from_utc_datetime(&d.naive_utc())
            .fix()
            .local_minus_utc() as i64
            * 1000
    })
}

/// Cuts `[a, b)` at the zone's local hour boundaries and calls `f(hour of
/// day, length ms)` for each piece, in order (DST days have 23 or 25 pieces).
pub fn hour_pieces(tz: chrono_tz::Tz, a: i64, b: i64, mut f: impl FnMut(usize, i64)) {
    let mut t = a;
    while t < b {
        let off = offset_ms(tz, t);
        let local = t.saturating_add(off);
        let hour = (local.rem_euclid(DAY_MS) / HOUR_MS) as usize;
        let next = (local - local.rem_euclid(HOUR_MS))
            .saturating_add(HOUR_MS)
            .saturating_sub(off);
        let end = if next > t { next.min(b) } else { b };
        f(hour, end - t);
        t = end;
    }
}

/// The local hour of day of `t` in `tz`.
pub fn hour_of(tz: chrono_tz::Tz, t: i64) -> usize {
    (t.saturating_add(offset_ms(tz, t)).rem_euclid(DAY_MS) / HOUR_MS) as usize
}

#[cfg(test)]
#[path = "clock_tests.rs"]
mod tests;
