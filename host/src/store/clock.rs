//! The store's side of a wall-clock step: what waits for a wall time that
//! stands for "this long from now" (a retry's backoff) moves with the
//! step, so it waits as long as it was meant to; schedules are looked at
//! again with Vixie cron's rules for steps.

use rusqlite::params;

use super::{Result, Store, exec};

/// A step of at least this much is a correction: schedules start over
/// from the new time (Vixie cron's three hours).
pub const CORRECTION_MS: i64 = 3 * 3_600_000;

/// What a step changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Restepped {
    /// Backoffs moved by the step.
    pub backoffs: usize,
    /// Schedules whose next firing was computed again.
    pub schedules: usize,
}

impl Store {
    /// The wall clock stepped by `delta` ms (negative: back) and now reads
    /// `now`. Backoffs move by `delta`. Schedules follow Vixie cron: a step
    /// of three hours or more either way is a correction, and every
    /// schedule starts over from the new time (nothing skipped is caught
    /// up, nothing fires twice); under three hours, a schedule firing more
    /// often than hourly (a wildcard job) goes on from the new time, and
    /// one at fixed times keeps its next firing: after a step back it does
    /// not fire twice, after a step forward what was skipped fires once.
    pub fn clock_stepped(
        &mut self,
        delta: i64,
        now: i64,
        next_fire: impl Fn(&str, i64) -> Option<i64>,
    ) -> Result<Restepped> {
        let tx = self.conn.transaction()?;
        let backoffs = exec(
            &tx,
            "UPDATE tasks SET not_before = not_before + ?1
             WHERE state = 'queued' AND not_before IS NOT NULL",
            [delta],
        )?;
        let mut schedules = 0;
        if delta != 0 {
            let templates: Vec<(i64, String)> = {
                let mut stmt = tx.prepare(
                    "SELECT id, schedule FROM tasks
                     WHERE state = 'scheduled' AND schedule IS NOT NULL AND next_fire_at IS NOT NULL",
                )?;
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?
            };
            for (id, expr) in templates {
                let Some(next) = next_fire(&expr, now) else {
                    continue;
                };
                let frequent = next_fire(&expr, next).is_some_and(|n| n - next <= 3_600_000);
                if delta.abs() >= CORRECTION_MS || frequent {
                    schedules += exec(
                        &tx,
                        "UPDATE tasks SET next_fire_at = ?2 WHERE id = ?1",
                        params![id, next],
                    )?;
                }
            }
        }
        tx.commit()?;
        Ok(Restepped {
            backoffs,
            schedules,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests::{store, submit};

    const H: i64 = 3_600_000;

    /// A cron-like clock for the test: "wild" fires every minute, "fixed" every day at 0:00.
    fn next(expr: &str, at: i64) -> Option<i64> {
        let every = if expr.contains("*/1") { 60_000 } else { 24 * H };
        Some((at / every + 1) * every)
    }

    fn next_fire(s: &crate::store::Store, id: i64) -> i64 {
        s.show(id).unwrap().task.next_fire_at.unwrap()
    }

    #[test]
    fn steps_follow_vixie_cron_and_backoffs_move_with_the_clock() {
        let (_d, mut s) = store();
        let wild = submit(&mut s, "command = \"true\"\nschedule = \"*/1 * * * *\"\n")[0];
        let fixed = submit(&mut s, "command = \"true\"\nschedule = \"daily@03:00\"\n")[0];
        let (w0, f0) = (next_fire(&s, wild), next_fire(&s, fixed));
        let now = 10 * 24 * H;
        // Back an hour: the wildcard goes on from the new time, the fixed one keeps its firing.
        let r = s.clock_stepped(-H, now, next).unwrap();
        assert_eq!(r.schedules, 1);
        assert_eq!(next_fire(&s, wild), next("*/1", now).unwrap());
        assert_eq!(next_fire(&s, fixed), f0, "a fixed firing is not repeated");
        // Forward an hour: the same (what the fixed one skipped fires once, at the next pass).
        s.clock_stepped(H, now, next).unwrap();
        assert_eq!(next_fire(&s, fixed), f0);
        // Forward five hours: a correction, every schedule starts over from the new time.
        s.clock_stepped(5 * H, now, next).unwrap();
        assert_eq!(next_fire(&s, fixed), next("daily", now).unwrap());
        assert_ne!(w0, 0);
        // A backoff due in 5 s by the old clock is due in 5 s by the new one.
        let task = submit(&mut s, "command = \"true\"\n")[0];
        s.conn
            .execute(
                "UPDATE tasks SET not_before = ?1 WHERE id = ?2",
                [now + 5_000, task],
            )
            .unwrap();
        let r = s.clock_stepped(-4 * H, now - 4 * H, next).unwrap();
        assert_eq!(r.backoffs, 1);
        let nb: i64 = s
            .conn
            .query_row("SELECT not_before FROM tasks WHERE id = ?1", [task], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(nb, now - 4 * H + 5_000);
    }
}
