//! The store's side of a wall-clock step: what waits for a wall time that
//! stands for "this long from now" (a retry's backoff) moves with the
//! step, so it waits as long as it was meant to; schedules are looked at
//! again with Vixie cron's rules for steps.

use rusqlite::params;

use super::{Result, Store, exec};

/// A step back of at least this much is a correction: schedules start over
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
    /// `now`. Backoffs move by `delta`. After a step back, a schedule
    /// firing more often than hourly (a wildcard job, in cron's words)
    /// goes on from the new time; one firing at fixed times keeps its next
    /// firing (nothing fires twice), unless the step is a correction of
    /// three hours or more. A step forward needs nothing here: what was
    /// skipped fires once at the next pass.
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
        if delta < 0 {
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
                if -delta >= CORRECTION_MS || frequent {
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
