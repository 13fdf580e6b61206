//! The digest at `[notify] digest`: when a scheduled time passes, the runs
//! of the period since the last digest are summed into one `digest` event.
//! A daemon that was down at that time writes the digest it missed when it
//! starts (the latest one only, covering the whole gap); a period is told
//! once, even across restarts (the store records it). Each digest also
//! writes the HTML report of its period to `reports/<end>.html` in the state
//! dir (`report::render`), and its event names that file (`report`).

use std::sync::Arc;
use std::time::Duration;

use chrono_tz::Tz;

use crate::daemon::state::Daemon;
use crate::report::{compute, render};
use crate::task::schedule::Schedule;
use crate::time::now_ms;

/// Longest sleep between looks at the clock (a clock set forward, or a
/// suspended machine, is noticed within this).
const LOOK_EVERY: Duration = Duration::from_secs(60);

/// Firings a catch-up walks at most (a schedule every minute, down for
/// two months).
const MAX_STEPS: usize = 100_000;

/// The digests' HTML reports, under the state dir.
pub const REPORTS: &str = "reports";

/// The file name of the report of a period ending at `to` (local time).
pub fn report_name(to: i64, tz: Tz) -> String {
    format!(
        "{}.html",
        crate::report::charts::local(to, tz, "%Y-%m-%d_%H-%M")
    )
}

/// What to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Tell the period `[from, to)` (Unix ms).
    Tell {
        /// Its start.
        from: i64,
        /// Its end: the scheduled time.
        to: i64,
    },
    /// Nothing is due before this time (Unix ms); `None`: never.
    WaitUntil(Option<i64>),
}

fn next(schedule: &Schedule, tz: Tz, after: i64) -> Option<i64> {
    schedule
        .next_after(crate::time::to_utc(after), tz)
        .map(|t| t.timestamp_millis())
}

/// The plan at `now`: the latest scheduled time after the last digest's end
/// (or, before the first digest, after `started`) that has passed, if any.
/// The period starts at the last digest's end, or, for the first digest,
/// one schedule interval before its end.
pub fn plan(schedule: &Schedule, tz: Tz, last_end: Option<i64>, started: i64, now: i64) -> Plan {
    let since = last_end.unwrap_or(started);
    let mut latest = None;
    let mut t = next(schedule, tz, since);
    for _ in 0..MAX_STEPS {
        match t {
            Some(at) if at <= now => {
                latest = Some(at);
                t = next(schedule, tz, at);
            }
            _ => break,
        }
    }
    match latest {
        Some(to) => {
            let interval = t.map_or(24 * 3_600_000, |n| n - to);
            Plan::Tell {
                from: last_end.unwrap_or(to - interval),
                to,
            }
        }
        None => Plan::WaitUntil(t),
    }
}

impl Daemon {
    /// Writes each digest when it is due, for the daemon's life.
    pub async fn digest_loop(self: Arc<Self>, schedule: Schedule) {
        let started = now_ms();
        loop {
            let me = Arc::clone(&self);
            let s = schedule.clone();
            let wake = tokio::task::spawn_blocking(move || me.digest_step(&s, started))
                .await
                .ok()
                .flatten();
            let wait = wake.map_or(LOOK_EVERY, |at| {
                Duration::from_millis((at - now_ms()).max(0) as u64).min(LOOK_EVERY)
            });
            tokio::time::sleep(wait.max(Duration::from_millis(200))).await;
        }
    }

    /// Writes the digest if one is due; when to look again.
    fn digest_step(&self, schedule: &Schedule, started: i64) -> Option<i64> {
        let tz = self.cfg.tz();
        let last = match self.store().last_digest_end(now_ms()) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("cannot read the last digest: {e}");
                return Some(now_ms() + LOOK_EVERY.as_millis() as i64);
            }
        };
        match plan(schedule, tz, last, started, now_ms()) {
            Plan::WaitUntil(at) => at,
            Plan::Tell { from, to } => {
                let report = self.write_report(from, to);
                match self
                    .store()
                    .write_digest(now_ms(), from, to, true, report.as_deref())
                {
                    Ok(true) => tracing::info!("digest written for the period ending {to}"),
                    Ok(false) => {}
                    Err(e) => tracing::warn!("cannot write the digest: {e}"),
                }
                self.changed();
                Some(now_ms())
            }
        }
    }

    /// Writes the HTML report of `[from, to)` to `reports/<end>.html` in
    /// the state dir, atomically; its path, or `None` (logged) when it
    /// could not be made: the digest goes out without it. The file is the
    /// daemon user's only (umask 077, in the 0700 state dir), like the
    /// database it is computed from; `nightjar report --html` makes a copy
    /// to share.
    fn write_report(&self, from: i64, to: i64) -> Option<String> {
        let tariff = self.cfg.tariff();
        // A read-only connection of its own: the store's lock is not held.
        let acc = crate::store::Store::open_read_only(&self.cfg.db_path())
            .map_err(anyhow::Error::from)
            .and_then(|store| {
                compute::accounting(&store, &tariff, (from, to, now_ms()), &self.gpu_names())
            });
        let rel = std::path::Path::new(REPORTS).join(report_name(to, self.cfg.tz()));
        let written = acc.map_err(|e| e.to_string()).and_then(|acc| {
            let page = render::html(&acc);
            self.state
                .write(&rel, page.as_bytes())
                .map_err(|e| e.to_string())
        });
        match written {
            Ok(()) => Some(self.cfg.state_dir.join(rel).display().to_string()),
            Err(e) => {
                tracing::warn!("cannot write the digest's report {}: {e}", rel.display());
                None
            }
        }
    }

    /// `notify digest`: a digest now, of the period since the last
    /// scheduled one (or the last 24 hours); the schedule is not moved.
    pub fn digest_now(&self) -> anyhow::Result<(i64, i64)> {
        let now = now_ms();
        let from = self
            .store()
            .last_digest_end(now)?
            .unwrap_or(now - 24 * 3_600_000);
        let report = self.write_report(from, now);
        self.store()
            .write_digest(now, from, now, false, report.as_deref())?;
        self.changed();
        Ok((from, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .timestamp_millis()
    }

    fn daily() -> (Schedule, Tz) {
        (
            crate::task::schedule::parse("daily@08:00").unwrap(),
            "Asia/Shanghai".parse().unwrap(),
        )
    }

    #[test]
    fn the_first_digest_waits_for_its_time_and_covers_one_interval() {
        let (s, tz) = daily();
        let started = ms("2026-11-30T10:00:00+08:00");
        assert_eq!(
            plan(&s, tz, None, started, started + 1000),
            Plan::WaitUntil(Some(ms("2026-12-01T08:00:00+08:00")))
        );
        assert_eq!(
            plan(&s, tz, None, started, ms("2026-12-01T08:00:01+08:00")),
            Plan::Tell {
                from: ms("2026-11-30T08:00:00+08:00"),
                to: ms("2026-12-01T08:00:00+08:00")
            }
        );
    }

    #[test]
    fn a_daemon_down_for_three_days_tells_one_digest_covering_the_gap() {
        let (s, tz) = daily();
        let last = ms("2026-11-27T08:00:00+08:00");
        let now = ms("2026-11-30T12:00:00+08:00");
        assert_eq!(
            plan(&s, tz, Some(last), now - 1000, now),
            Plan::Tell {
                from: last,
                to: ms("2026-11-30T08:00:00+08:00")
            }
        );
        // Once told, the next is tomorrow.
        let told = ms("2026-11-30T08:00:00+08:00");
        assert_eq!(
            plan(&s, tz, Some(told), now - 1000, now),
            Plan::WaitUntil(Some(ms("2026-12-01T08:00:00+08:00")))
        );
    }

    #[test]
    fn weekly_digests_cover_a_week() {
        let s = crate::task::schedule::parse("weekly@mon08:00").unwrap();
        let tz: Tz = "Europe/Berlin".parse().unwrap();
        let started = ms("2026-11-25T12:00:00+01:00");
        let monday = ms("2026-11-30T08:00:00+01:00");
        assert_eq!(
            plan(&s, tz, None, started, monday + 5000),
            Plan::Tell {
                from: monday - 7 * 24 * 3_600_000,
                to: monday
            }
        );
    }
}
