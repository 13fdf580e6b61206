//! A run claimed but never started: its supervisor was gone (the daemon
//! killed at dispatch, the supervisor killed before it read its spec)
//! before it marked the run started, so the task's command never ran. The
//! run is recorded `lost` saying so, and the task goes back to the queue
//! without the attempt counting against its retries.

use super::queue::Finished;
use rusqlite::OptionalExtension;

use super::{Result, Store, TaskState, event, exec};

/// What a run given back says (its message, the task's reason, the event).
pub const GIVEN_BACK: &str = "never started: its supervisor was gone before it reached the task (a daemon or supervisor killed at dispatch); given back to the queue, the attempt not counted";

/// The reason of a task whose run was given back after its cancel.
pub const CANCELLED: &str = "cancelled before it started";

/// What that run says.
const CANCELLED_RUN: &str = "never started: its task was cancelled first";

impl Store {
    /// Records run `run` (still `running`) as never started and queues its
    /// task again with the attempt given back, in one transaction. `None`
    /// when the run's end was already recorded.
    pub fn give_back(&mut self, run: i64, at: i64) -> Result<Option<Finished>> {
        let tx = self.conn.transaction()?;
        let Some((task, cancelled)) = tx
            .query_row(
                "SELECT r.task_id, t.cancel_requested = 1 FROM runs r JOIN tasks t ON t.id = r.task_id
                 WHERE r.id = ?1 AND r.state = 'running'",
                [run],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, bool>(1)?)),
            )
            .optional()?
        else {
            return Ok(None);
        };
        // A cancel asked meanwhile still wins: the task ends cancelled, as
        // a cancel of a queued task ends it (its event, its dependants).
        let (state, reason, run_says) = if cancelled {
            (TaskState::Cancelled, CANCELLED, CANCELLED_RUN)
        } else {
            (TaskState::Queued, GIVEN_BACK, GIVEN_BACK)
        };
        exec(
            &tx,
            "UPDATE runs SET state = 'finished', finished_at = ?2, class = 'lost', message = ?3
             WHERE id = ?1",
            rusqlite::params![run, at, run_says],
        )?;
        exec(
            &tx,
            "UPDATE tasks SET state = ?2, reason = ?3, attempts = MAX(attempts - 1, 0),
                    cancel_requested = 0, eligible_at = ?4,
                    finished_at = CASE WHEN ?2 = 'cancelled' THEN ?4 ELSE finished_at END
             WHERE id = ?1",
            rusqlite::params![task, state.as_str(), reason, at],
        )?;
        if cancelled {
            event(&tx, at, Some(task), Some(run), "cancelled", CANCELLED)?;
            super::deps::block_dependants_of(&tx, task, at)?;
        } else {
            event(&tx, at, Some(task), Some(run), "given-back", GIVEN_BACK)?;
        }
        tx.commit()?;
        Ok(Some(Finished {
            state,
            reason: Some(reason.into()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests::{store, submit};
    use crate::store::{NewRun, TaskState};

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

    #[test]
    fn a_run_given_back_after_its_cancel_ends_the_task_as_a_queued_cancel_does() {
        let (dir, mut s) = store();
        let ids = submit(
            &mut s,
            "[[task]]\nname = \"a\"\ncommand = \"train\"\n[[task]]\nname = \"b\"\ncommand = \"eval\"\nafter = [\"a\"]\n",
        );
        let (a, b) = (ids[0], ids[1]);
        let run = s
            .claim(a, &NewRun::default(), dir.path(), 1_000)
            .unwrap()
            .unwrap();
        // Cancelled while its run is claimed but not yet started.
        s.cancel(a, 1_500).unwrap();
        let f = s.give_back(run.id, 2_000).unwrap().expect("recorded");
        assert_eq!(f.state, TaskState::Cancelled);
        assert_eq!(f.reason.as_deref(), Some(super::CANCELLED));
        let kinds: Vec<String> = s
            .conn
            .prepare("SELECT kind FROM events WHERE task_id = ?1 ORDER BY id")
            .unwrap()
            .query_map([a], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            kinds.last().map(String::as_str),
            Some("cancelled"),
            "{kinds:?}"
        );
        assert!(!kinds.iter().any(|k| k == "given-back"), "{kinds:?}");
        let run = s.run(run.id).unwrap();
        assert!(run.message.unwrap_or_default().contains("cancelled first"));
        // Its after-ok dependant can never run: blocked, not left waiting.
        assert_eq!(s.task(b).unwrap().state, TaskState::Blocked);
    }
}
