//! A chain member's health: its failures over a window of recent calls (not
//! only in a row, so a plugin that fails every second call is still caught),
//! its last cause and since when, and the CPU it spends per minute.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The member's record of recent calls.
#[derive(Debug, Clone)]
pub struct Health {
    /// Outcomes of the last calls, newest last: true = failed.
    window: VecDeque<bool>,
    size: usize,
    max_failures: usize,
    /// The last failure: (message, cause, when in Unix ms).
    pub last_failure: Option<(String, String, i64)>,
    /// CPU spent in the current minute.
    cpu_minute: Duration,
    minute_start: Instant,
    /// CPU spent in the last complete minute.
    pub cpu_last_minute: Duration,
    /// Wall time of recent calls, to tell a plugin that spends its whole deadline.
    recent_wall: VecDeque<Duration>,
}

impl Health {
    /// Disabled after `max_failures` of the last `window` calls fail.
    pub fn new(max_failures: u32, window: u32) -> Health {
        let size = window.max(1) as usize;
        Health {
            window: VecDeque::with_capacity(size),
            size,
            max_failures: (max_failures.max(1) as usize).min(size),
            last_failure: None,
            cpu_minute: Duration::ZERO,
            minute_start: Instant::now(),
            cpu_last_minute: Duration::ZERO,
            recent_wall: VecDeque::with_capacity(10),
        }
    }

    /// Records one call; true when the failures in the window reach the limit.
    pub fn record(&mut self, failed: bool) -> bool {
        if self.window.len() == self.size {
            self.window.pop_front();
        }
        self.window.push_back(failed);
        self.failures() >= self.max_failures
    }

    /// Failures in the window.
    pub fn failures(&self) -> usize {
        self.window.iter().filter(|f| **f).count()
    }

    /// `failures/calls` over the window, for `plugins ls`.
    pub fn rate(&self) -> String {
        format!("{}/{}", self.failures(), self.window.len())
    }

    /// Forgets the window (a reload gives a fresh start).
    pub fn reset(&mut self) {
        self.window.clear();
        self.recent_wall.clear();
    }

    /// Adds a call's cost; returns the CPU of a minute that just ended with
    /// more than `budget`, once.
    pub fn spend(&mut self, cpu: Duration, wall: Duration, budget: Duration) -> Option<Duration> {
        if self.recent_wall.len() == 10 {
            self.recent_wall.pop_front();
        }
        self.recent_wall.push_back(wall);
        self.cpu_minute += cpu;
        if self.minute_start.elapsed() >= Duration::from_secs(60) {
            self.cpu_last_minute = self.cpu_minute;
            self.cpu_minute = Duration::ZERO;
            self.minute_start = Instant::now();
            if self.cpu_last_minute > budget {
                return Some(self.cpu_last_minute);
            }
        } else if self.cpu_minute > budget {
            // Over the budget before the minute is out: count it now, once.
            let over = self.cpu_minute;
            self.cpu_minute = Duration::ZERO;
            self.minute_start = Instant::now();
            self.cpu_last_minute = over;
            return Some(over);
        }
        None
    }

    /// The CPU share of one core over the last minute, in percent.
    pub fn cpu_percent(&self) -> f64 {
        let cpu = self.cpu_last_minute.max(self.cpu_minute);
        cpu.as_secs_f64() / 60.0 * 100.0
    }

    /// True when most recent calls took at least half their deadline.
    pub fn slow(&self, deadline: Duration) -> bool {
        let n = self.recent_wall.len();
        n >= 3
            && self
                .recent_wall
                .iter()
                .filter(|w| **w * 2 >= deadline)
                .count()
                * 2
                > n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_every_second_call_is_caught_by_the_window() {
        let mut h = Health::new(3, 10);
        let mut disabled_at = None;
        for i in 0..10 {
            if h.record(i % 2 == 1) {
                disabled_at = Some(i);
                break;
            }
        }
        assert_eq!(disabled_at, Some(5), "3 failures among calls 0..=5");
        assert_eq!(h.rate(), "3/6");
    }

    #[test]
    fn old_failures_leave_the_window() {
        let mut h = Health::new(3, 4);
        assert!(!h.record(true));
        assert!(!h.record(true));
        for _ in 0..4 {
            assert!(!h.record(false));
        }
        assert_eq!(h.failures(), 0);
        assert!(!h.record(true));
    }

    #[test]
    fn a_minute_over_the_cpu_budget_counts_once() {
        let mut h = Health::new(3, 10);
        let budget = Duration::from_secs(1);
        assert!(
            h.spend(Duration::from_millis(600), Duration::ZERO, budget)
                .is_none()
        );
        let over = h.spend(Duration::from_millis(600), Duration::ZERO, budget);
        assert_eq!(over, Some(Duration::from_millis(1200)));
        assert!(
            h.spend(Duration::from_millis(100), Duration::ZERO, budget)
                .is_none()
        );
    }

    #[test]
    fn slow_means_most_calls_use_half_the_deadline() {
        let mut h = Health::new(3, 10);
        let d = Duration::from_millis(100);
        for _ in 0..4 {
            h.spend(Duration::ZERO, Duration::from_millis(90), Duration::MAX);
        }
        assert!(h.slow(d));
        for _ in 0..10 {
            h.spend(Duration::ZERO, Duration::from_millis(1), Duration::MAX);
        }
        assert!(!h.slow(d));
    }
}
