//! A tariff's spans asked for again and again over a range that moves
//! forward: a policy's `tariff` import, called once a pass (a simulation
//! makes tens of thousands of passes). The window edges of a run of local
//! days, each with the price from it on, are kept between calls, so a call
//! costs the zone conversions of its two ends instead of one per window
//! edge of every day in its range. The answer is [`Tariff::spans`]'s, cut
//! for cut: the kept days always include the days `spans` would look at,
//! and the edges of any other day fall outside the range (a day's edges
//! lie between its own midnight and the next day's, a DST gap's end
//! included).

use std::sync::Arc;

use super::Tariff;

/// Days made beyond the last one a call needs, for the calls after it.
const AHEAD_DAYS: u64 = 7;

/// The spans of one tariff, its edges kept between calls.
#[derive(Debug, Default)]
pub struct KeptSpans {
    /// The tariff the edges are of (another one starts afresh).
    tariff: Option<Arc<Tariff>>,
    /// The first and last local days whose edges `edges` holds.
    days: Option<(chrono::NaiveDate, chrono::NaiveDate)>,
    /// Each edge of those days, sorted, with the price from it on.
    edges: Vec<(i64, f64)>,
}

impl KeptSpans {
    /// [`Tariff::spans`] of `tariff` from `from_ms` to `to_ms`.
    pub fn spans(
        &mut self,
        tariff: &Arc<Tariff>,
        from_ms: i64,
        to_ms: i64,
    ) -> Vec<(i64, i64, f64)> {
        if to_ms <= from_ms {
            return Vec::new();
        }
        if !self.tariff.as_ref().is_some_and(|t| Arc::ptr_eq(t, tariff)) {
            *self = KeptSpans {
                tariff: Some(Arc::clone(tariff)),
                ..KeptSpans::default()
            };
        }
        let Some((first, last)) = tariff.days_around(from_ms, to_ms) else {
            return tariff.cut(&[], from_ms, to_ms);
        };
        if !self.days.is_some_and(|(a, b)| a <= first && last <= b) {
            let until = (last.checked_add_days(chrono::Days::new(AHEAD_DAYS))).unwrap_or(last);
            self.edges = tariff.edges(first, until);
            self.days = Some((first, until));
        }
        tariff.cut(&self.edges, from_ms, to_ms)
    }
}

#[cfg(test)]
#[path = "tariff_kept_tests.rs"]
mod tests;
