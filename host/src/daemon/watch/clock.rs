//! Steps of the wall clock (NTP after a bad boot, a VM resumed, a hand
//! `date -s`): the daemon waits on the monotonic clock, so a step is found
//! as the gap between wall and boot time changing by more than
//! [`STEP`], and what the store keeps as wall times is moved or looked at
//! again (`store/clock.rs`).

use std::sync::Arc;

use crate::daemon::state::{Daemon, lock};
use crate::time::now_ms;

/// A change of wall minus boot time past this is a step, not drift.
pub const STEP_MS: i64 = 2_000;

/// Wall minus boot time as last seen.
#[derive(Debug)]
pub struct ClockWatch {
    offset: i64,
}

impl Default for ClockWatch {
    fn default() -> Self {
        ClockWatch {
            offset: now_ms() - crate::sys::boot_ms(),
        }
    }
}

impl ClockWatch {
    /// The step since the last look (ms, negative: back), if there was one;
    /// slow drift is followed without a word.
    pub fn step(&mut self) -> Option<i64> {
        self.step_with(now_ms() - crate::sys::boot_ms())
    }

    fn step_with(&mut self, offset: i64) -> Option<i64> {
        let delta = offset - self.offset;
        self.offset = offset;
        (delta.abs() > STEP_MS).then_some(delta)
    }
}

impl Daemon {
    /// The wall clock stepped by `delta` ms: backoffs move with it,
    /// schedules are looked at again, the policies are asked again (a
    /// deferral's `until` is a wall time).
    pub(in crate::daemon) fn clock_stepped(self: &Arc<Self>, delta: i64) {
        let now = now_ms();
        let tz = self.cfg.tz();
        let done = self.store().clock_stepped(delta, now, |expr, at| {
            crate::task::schedule::parse(expr)
                .ok()
                .and_then(|s| s.next_after(crate::time::to_utc(at), tz))
                .map(|t| t.timestamp_millis())
        });
        match done {
            Ok(r) => tracing::warn!(
                "the wall clock stepped {} by {}: {} backoff(s) moved with it, {} schedule(s) computed again",
                if delta < 0 { "back" } else { "forward" },
                // Whole seconds: two clock readings a moment apart make a
                // 4 h step read 3h 59m 59s 999ms.
                humantime::format_duration(std::time::Duration::from_secs(
                    (delta.unsigned_abs() + 500) / 1000
                )),
                r.backoffs,
                r.schedules
            ),
            Err(e) => tracing::error!("the wall clock stepped by {delta} ms: {e}"),
        }
        *lock(&self.pipeline.policy_wake) = None;
        self.changed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_is_followed_and_a_step_is_told_once() {
        let mut w = ClockWatch { offset: 1_000_000 };
        assert_eq!(w.step_with(1_000_500), None, "half a second of drift");
        assert_eq!(
            w.step_with(1_001_900),
            None,
            "more drift, from the new mark"
        );
        assert_eq!(w.step_with(1_001_900 - 4 * 3_600_000), Some(-4 * 3_600_000));
        assert_eq!(w.step_with(1_001_900 - 4 * 3_600_000), None, "told once");
        let b = crate::sys::boot_ms();
        assert!(
            b > 0 && crate::sys::boot_ms() >= b,
            "boot time runs forward"
        );
    }
}
