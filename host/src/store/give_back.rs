//! A run claimed but never started: its supervisor was gone (the daemon
//! killed at dispatch, the supervisor killed before it read its spec)
//! before it marked the run started, so the task's command never ran. The
//! run is recorded `lost` saying so, and the task goes back to the queue
//! without the attempt counting against its retries.

use super::queue::Finished;
use super::{Result, Store, TaskState, event, exec};

/// What a run given back says (its message, the task's reason, the event).
pub const GIVEN_BACK: &str = "never started: its supervisor was gone before it reached the task (a daemon or supervisor killed at dispatch); given back to the queue, the attempt not counted";

impl Store {
    /// Records run `run` (still `running`) as never started and queues its
    /// task again with the attempt given back, in one transaction. `None`
    /// when the run's end was already recorded.
    pub fn give_back(&mut self, run: i64, at: i64) -> Result<Option<Finished>> {
        let tx = self.conn.transaction()?;
        let changed = exec(
            &tx,
            "UPDATE runs SET state = 'finished', finished_at = ?2, class = 'lost', message = ?3
             WHERE id = ?1 AND state = 'running'",
            rusqlite::params![run, at, GIVEN_BACK],
        )?;
        if changed == 0 {
            return Ok(None);
        }
        let task: i64 = tx.query_row("SELECT task_id FROM runs WHERE id = ?1", [run], |r| {
            r.get(0)
        })?;
        // A cancel asked meanwhile still wins: the task ends cancelled.
        let cancelled: bool = tx.query_row(
            "SELECT cancel_requested = 1 FROM tasks WHERE id = ?1",
            [task],
            |r| r.get(0),
        )?;
        let (state, reason) = if cancelled {
            (TaskState::Cancelled, "cancelled before it started")
        } else {
            (TaskState::Queued, GIVEN_BACK)
        };
        exec(
            &tx,
            "UPDATE tasks SET state = ?2, reason = ?3, attempts = MAX(attempts - 1, 0),
                    cancel_requested = 0, eligible_at = ?4,
                    finished_at = CASE WHEN ?2 = 'cancelled' THEN ?4 ELSE finished_at END
             WHERE id = ?1",
            rusqlite::params![task, state.as_str(), reason, at],
        )?;
        event(&tx, at, Some(task), Some(run), "given-back", GIVEN_BACK)?;
        tx.commit()?;
        Ok(Some(Finished {
            state,
            reason: Some(reason.into()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::store::NewRun;
    use crate::store::tests::{store, submit};

    #[test]
    fn a_run_never_started_requeues_its_task_without_spending_the_attempt() {
        let (dir, mut s) = store();
        let t = submit(&mut s, "command = \"train\"")[0];
        let run = s
            .claim(t, &NewRun::default(), dir.path(), 1_000)
            .unwrap()
            .unwrap();
        let attempts = |s: &crate::store::Store| -> u32 {
            s.conn
                .query_row("SELECT attempts FROM tasks WHERE id = ?1", [t], |r| {
                    r.get(0)
                })
                .unwrap()
        };
        assert_eq!(attempts(&s), 1);
        let f = s.give_back(run.id, 2_000).unwrap().expect("recorded");
        assert_eq!(f.state, crate::store::TaskState::Queued);
        assert_eq!(attempts(&s), 0, "the attempt is given back");
        let r = s.run(run.id).unwrap();
        assert_eq!(r.class, Some(crate::store::RunClass::Lost));
        assert!(r.message.unwrap_or_default().contains("never started"));
        assert!(s.give_back(run.id, 3_000).unwrap().is_none(), "once");
        // Claimed again: a second run, but the first attempt that counts.
        s.claim(t, &NewRun::default(), dir.path(), 4_000)
            .unwrap()
            .unwrap();
        assert_eq!(attempts(&s), 1, "one attempt spent, not two");
    }
}
