//! What the store keeps of checkpoints: the one each attempt resumed from
//! (`runs.checkpoint`, schema 5) with a `checkpoint` event saying what was
//! found, and the spec a preemption reads to choose its signal.

use rusqlite::{OptionalExtension, params};

use super::{Result, Store, StoreError, event, exec, row};
use crate::task::model::TaskSpec;

impl Store {
    /// Records what the start of `run` found: the checkpoint it resumes from
    /// (`None`: it starts without one) and a note for the task's events.
    pub fn record_checkpoint(
        &mut self,
        run: i64,
        checkpoint: Option<&str>,
        note: &str,
        now: i64,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        exec(
            &tx,
            "UPDATE runs SET checkpoint = ?2 WHERE id = ?1",
            params![run, checkpoint],
        )?;
        let task: Option<i64> = row(&tx, "SELECT task_id FROM runs WHERE id = ?1", [run], |r| {
            r.get(0)
        })
        .optional()?;
        event(&tx, now, task, Some(run), "checkpoint", note)?;
        tx.commit()?;
        Ok(())
    }

    /// The stored spec of task `id`.
    pub fn task_spec(&self, id: i64) -> Result<TaskSpec> {
        let spec: Option<String> = row(
            &self.conn,
            "SELECT spec FROM tasks WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()?;
        let spec = spec.ok_or_else(|| StoreError::NotFound(format!("no task with id {id}")))?;
        Ok(serde_json::from_str(&spec)?)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{store, submit};
    use super::super::{NewRun, RunClass, RunOutcome};

    #[test]
    fn each_attempt_keeps_the_checkpoint_it_resumed_from() {
        let (dir, mut s) = store();
        let id = submit(
            &mut s,
            "command = \"true\"\npreemptible = true\ncheckpoint = { pattern = \"ckpt/*.pt\", signal = \"USR1\" }\n",
        )[0];
        assert_eq!(
            s.task_spec(id).unwrap().checkpoint.unwrap().signal,
            "SIGUSR1"
        );
        let first = s
            .claim(id, &NewRun::default(), dir.path(), 2_000)
            .unwrap()
            .unwrap();
        s.request_preempt(id, "fair share", 2_500).unwrap();
        let out = RunOutcome {
            class: RunClass::Cancelled,
            exit_code: None,
            signal: Some(15),
            finished_at: 3_000,
            message: None,
        };
        s.finish_run(first.id, &out).unwrap();
        let second = s
            .claim(id, &NewRun::default(), dir.path(), 4_000)
            .unwrap()
            .unwrap();
        assert_eq!(second.attempt, 2);
        s.record_checkpoint(
            second.id,
            Some("/w/ckpt/step-3.pt"),
            "resumed from /w/ckpt/step-3.pt",
            4_000,
        )
        .unwrap();
        let d = s.show(id).unwrap();
        assert_eq!(d.runs[0].checkpoint, None);
        assert_eq!(d.runs[1].checkpoint.as_deref(), Some("/w/ckpt/step-3.pt"));
        assert!(
            d.events
                .iter()
                .any(|e| e.kind == "checkpoint" && e.message.contains("step-3"))
        );
    }
}
