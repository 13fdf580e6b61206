//! Logs that stay readable under a fault: a failure that repeats (a full
//! state disk refusing every start, a pass failing each turn) is one line
//! when it begins or changes, a count of repeats at most every
//! [`RECOUNT`], and one line when it clears; never a line per task per pass.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::daemon::locks::leaf;

/// How often repeats of an unchanged failure are counted in the log.
pub const RECOUNT: Duration = Duration::from_secs(30);

/// One kind of failure the daemon may meet again and again.
pub struct Condition {
    /// What fails, for the log ("cannot start tasks").
    what: &'static str,
    open: Mutex<Option<Open>>,
}

struct Open {
    text: String,
    since: Instant,
    told: Instant,
    /// Failures since the line last told.
    repeats: u64,
    total: u64,
}

/// What a call made the log say (tests read it; the daemon ignores it).
#[derive(Debug, PartialEq, Eq)]
pub enum Said {
    /// Nothing: counted.
    Nothing,
    /// The failure began or changed.
    Began,
    /// The repeats were counted.
    Counted(u64),
    /// It cleared.
    Cleared(u64),
}

impl Condition {
    /// A condition named by what fails.
    pub const fn new(what: &'static str) -> Condition {
        Condition {
            what,
            open: Mutex::new(None),
        }
    }

    /// It failed again, with `text` (no task id in it: the text is what
    /// repeats), first seen on `subject`.
    pub fn failed(&self, subject: &str, text: &str) -> Said {
        self.failed_at(Instant::now(), subject, text)
    }

    fn failed_at(&self, now: Instant, subject: &str, text: &str) -> Said {
        let mut open = leaf(&self.open);
        match open.as_mut() {
            Some(o) if o.text == text => {
                o.repeats += 1;
                o.total += 1;
                if now.duration_since(o.told) < RECOUNT {
                    return Said::Nothing;
                }
                let n = std::mem::take(&mut o.repeats);
                tracing::warn!(
                    "{}: still {text}: {n} more time(s) in the last {} s",
                    self.what,
                    now.duration_since(o.told).as_secs()
                );
                o.told = now;
                Said::Counted(n)
            }
            _ => {
                tracing::error!(
                    "{}: {text} ({subject}); repeats are counted every {} s until it changes or clears",
                    self.what,
                    RECOUNT.as_secs()
                );
                *open = Some(Open {
                    text: text.to_string(),
                    since: now,
                    told: now,
                    repeats: 0,
                    total: 1,
                });
                Said::Began
            }
        }
    }

    /// It worked: a failure that was open is told as cleared.
    pub fn cleared(&self) -> Said {
        let Some(o) = leaf(&self.open).take() else {
            return Said::Nothing;
        };
        tracing::info!(
            "{}: works again, after {} failure(s) over {} s",
            self.what,
            o.total,
            o.since.elapsed().as_secs()
        );
        Said::Cleared(o.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeating_failure_is_one_line_then_a_count_then_one_line_when_it_clears() {
        let c = Condition::new("cannot start tasks");
        let t0 = Instant::now();
        assert_eq!(c.failed_at(t0, "task 1", "disk full"), Said::Began);
        for i in 0..979 {
            let at = t0 + Duration::from_millis(10 * i);
            assert_eq!(c.failed_at(at, "task 2", "disk full"), Said::Nothing);
        }
        assert_eq!(
            c.failed_at(t0 + RECOUNT, "task 3", "disk full"),
            Said::Counted(980)
        );
        assert_eq!(
            c.failed_at(t0 + RECOUNT, "task 4", "disk full"),
            Said::Nothing
        );
        // Another failure is a new line.
        assert_eq!(c.failed_at(t0 + RECOUNT, "task 5", "locked"), Said::Began);
        assert_eq!(c.cleared(), Said::Cleared(1));
        assert_eq!(c.cleared(), Said::Nothing, "cleared once");
    }
}
