//! When the simulation follows the policy chain's wake-ups (a deferral's
//! `until`): a policy may ask to be asked again every second for ever, and
//! a run may hold its GPUs for a century (or a time nobody knows), so the
//! wake-ups that come between two events (a run's end, a job's arrival)
//! are followed only while they start something: after [`STALL_PASSES`]
//! of them, or [`STALL_MS`], that start nothing, the simulation goes on to
//! the next event (or, with none left, ends and reports the jobs still
//! deferred). A forecast also caps the wake-ups it follows in all
//! ([`Wakes::budget`]): every event may otherwise earn 10,000 more.

/// How long the chain's wake-ups alone may go on starting nothing, with no
/// run ending and no job arriving meanwhile: 30 days.
pub const STALL_MS: i64 = 30 * 86_400_000;

/// As [`STALL_MS`], in passes: a policy that asks to be asked again every
/// second would take 2.6 million passes to reach 30 days.
pub const STALL_PASSES: u32 = 10_000;

/// The wake-ups followed since the last event or start.
#[derive(Debug)]
pub(super) struct Wakes {
    /// When the last event or start was.
    since: i64,
    /// Wake-ups followed since then.
    passes: u32,
    /// Wake-ups left to follow in all (`None`: no cap).
    budget: Option<u64>,
    /// The last wake-ups started nothing for too long, and no event came since.
    pub(super) stalled: bool,
    /// The cap was reached: no wake-up is followed any more.
    pub(super) spent: bool,
}

impl Wakes {
    /// Counting from `now`, with no cap.
    pub(super) fn new(now: i64) -> Wakes {
        Wakes {
            since: now,
            passes: 0,
            budget: None,
            stalled: false,
            spent: false,
        }
    }

    /// At most `n` wake-ups in all.
    pub(super) fn budget(&mut self, n: u64) {
        self.budget = Some(n);
    }

    /// Something happened at `at` (a start, a run's end, an arrival): the
    /// wake-ups after it count afresh.
    pub(super) fn restart(&mut self, at: i64) {
        (self.since, self.passes, self.stalled) = (at, 0, false);
    }

    /// The next time to look: the chain's `wake` when it comes before the
    /// next `event` and may still be followed, else `event` (`None`:
    /// nothing is left to happen).
    pub(super) fn next(&mut self, event: Option<i64>, wake: Option<i64>) -> Option<i64> {
        if let Some(w) = wake.filter(|&w| event.is_none_or(|e| w < e)) {
            self.passes = self.passes.saturating_add(1);
            if w.saturating_sub(self.since) > STALL_MS || self.passes > STALL_PASSES {
                self.stalled = true;
            } else if self.budget == Some(0) {
                self.spent = true;
            } else {
                self.budget = self.budget.map(|b| b - 1);
                return Some(w);
            }
        }
        let t = event?;
        self.restart(t);
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_ups_that_start_nothing_give_way_to_the_next_event_then_count_afresh() {
        let mut w = Wakes::new(0);
        let mut now = 0;
        for _ in 0..STALL_PASSES {
            now = w.next(Some(i64::MAX / 2), Some(now + 1_000)).unwrap();
        }
        assert_eq!(now, i64::from(STALL_PASSES) * 1_000);
        assert_eq!(
            w.next(Some(i64::MAX / 2), Some(now + 1_000)),
            Some(i64::MAX / 2)
        );
        assert!(!w.stalled, "the event came: counting afresh");
        // With no event left, a stall ends it.
        let mut w = Wakes::new(0);
        let mut steps = 0;
        while let Some(t) = w.next(None, Some(now + 1_000)) {
            (now, steps) = (t, steps + 1);
        }
        assert_eq!(steps, STALL_PASSES);
        assert!(w.stalled);
        // Thirty days of hourly wake-ups is as long as 10,000 passes.
        let mut w = Wakes::new(0);
        let (mut now, mut steps) = (0, 0);
        while let Some(t) = w.next(None, Some(now + 3_600_000)) {
            (now, steps) = (t, steps + 1);
        }
        assert_eq!(steps, 30 * 24);
    }

    #[test]
    fn a_budget_caps_the_wake_ups_followed_in_all() {
        let mut w = Wakes::new(0);
        w.budget(5);
        let mut followed = 0;
        for e in 1..100 {
            // An event every hour, a wake-up asked every second between them.
            let event = Some(e * 3_600_000);
            let mut now = (e - 1) * 3_600_000;
            loop {
                let t = w.next(event, Some(now + 1_000)).unwrap();
                if Some(t) == event {
                    break;
                }
                (now, followed) = (t, followed + 1);
            }
        }
        assert_eq!(followed, 5);
        assert!(w.spent);
    }
}
