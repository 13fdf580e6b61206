//! The host's electricity tariff (`[tariff]` in the daemon config), for
//! policies that move work to cheap hours: [`prices`] answers what energy
//! costs from one time to another, as consecutive [`PriceSpan`]s in the
//! daemon's zone. Natively (unit tests) the calling thread's
//! [`TariffMock`] answers, and without one there is no tariff.
//!
//! ```
//! use nightjar_sdk::tariff::{self, PriceSpan, Schedule, TariffMock};
//!
//! let _mock = TariffMock::install(Schedule {
//!     currency: "CNY".into(),
//!     spans: vec![
//!         PriceSpan { start: 0, end: 3_600_000, price: 1.2 },
//!         PriceSpan { start: 3_600_000, end: 7_200_000, price: 0.3 },
//!     ],
//! });
//! let s = tariff::prices(1_800_000, 5_400_000).unwrap();
//! assert_eq!(s.spans.len(), 2);
//! assert_eq!(s.spans[0], PriceSpan { start: 1_800_000, end: 3_600_000, price: 1.2 });
//! ```

use std::cell::RefCell;

/// A stretch of time at one price.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriceSpan {
    /// Unix ms.
    pub start: i64,
    /// Unix ms, exclusive.
    pub end: i64,
    /// Price per kWh, in [`Schedule::currency`].
    pub price: f64,
}

/// The tariff over a range of time.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// The currency prices are in (`CNY`, `EUR`).
    pub currency: String,
    /// Consecutive spans covering the range asked, each at one price.
    pub spans: Vec<PriceSpan>,
}

impl Schedule {
    /// The lowest price of the schedule (none when it has no spans).
    pub fn lowest(&self) -> Option<f64> {
        self.spans.iter().map(|s| s.price).reduce(f64::min)
    }

    /// The price in force at `at`, if the schedule covers it.
    pub fn price_at(&self, at: i64) -> Option<f64> {
        self.spans
            .iter()
            .find(|s| s.start <= at && at < s.end)
            .map(|s| s.price)
    }
}

/// The host's prices from `start` to `end` (Unix ms; the host answers for
/// at most 14 days past `start`). `None` when the daemon's tariff is flat
/// (no time-of-use windows), or natively without a [`TariffMock`].
pub fn prices(start: i64, end: i64) -> Option<Schedule> {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::bindings::nightjar::plugin::tariff as abi;
        abi::prices(start, end).map(|s| Schedule {
            currency: s.currency,
            spans: s
                .spans
                .into_iter()
                .map(|p| PriceSpan {
                    start: p.start,
                    end: p.end,
                    price: p.price,
                })
                .collect(),
        })
    }
    #[cfg(not(target_arch = "wasm32"))]
    MOCK.with(|m| {
        let m = m.borrow();
        let s = m.as_ref()?;
        let end = end.min(start.saturating_add(14 * 86_400_000));
        let spans = s
            .spans
            .iter()
            .filter(|p| p.start < end && start < p.end)
            .map(|p| PriceSpan {
                start: p.start.max(start),
                end: p.end.min(end),
                price: p.price,
            })
            .collect();
        Some(Schedule {
            currency: s.currency.clone(),
            spans,
        })
    })
}

thread_local! {
    static MOCK: RefCell<Option<Schedule>> = const { RefCell::new(None) };
}

/// Answers [`prices`] on the thread that installed it (natively; on wasm the
/// host answers) from a fixed schedule, cut to the range asked. Dropping it
/// uninstalls it.
pub struct TariffMock(());

impl TariffMock {
    /// Installs `schedule` on this thread (replacing any other).
    pub fn install(schedule: Schedule) -> TariffMock {
        MOCK.with(|m| *m.borrow_mut() = Some(schedule));
        TariffMock(())
    }
}

impl Drop for TariffMock {
    fn drop(&mut self) {
        MOCK.with(|m| *m.borrow_mut() = None);
    }
}
