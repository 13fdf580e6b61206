//! The dashboard's reads: one page of the queue (LIMIT/OFFSET on the
//! queue's index, so a 10,000-task queue costs one page of rows, not all
//! of them) and the runs that ended since a moment.

use rusqlite::params;

use super::query::{TASK_COLUMNS, task_row};
use super::{Result, Store};

pub use nightjar_core::api::board::{FinishedRun, QueuePage};

/// Task kinds that can wait or run (sweeps and templates are folders of them).
const RUNNABLE: &str = "t.kind = 'task' AND t.state IN ('queued', 'held', 'running')";

impl Store {
    /// `limit` waiting or running tasks after skipping `offset`, and the
    /// counts of all of them.
    pub fn queue_page(&self, limit: u32, offset: u64) -> Result<QueuePage> {
        let (running, waiting) = self.conn.query_row(
            &format!(
                "SELECT COALESCE(SUM(t.state = 'running'), 0), COALESCE(SUM(t.state <> 'running'), 0)
                 FROM tasks t WHERE {RUNNABLE}"
            ),
            [],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        )?;
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks t WHERE {RUNNABLE}
             ORDER BY CASE t.state WHEN 'running' THEN 0 WHEN 'queued' THEN 1 ELSE 2 END, t.id
             LIMIT ?1 OFFSET ?2"
        );
        let rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map(
                params![limit, i64::try_from(offset).unwrap_or(i64::MAX)],
                task_row,
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(QueuePage {
            rows,
            running: running.max(0) as u64,
            waiting: waiting.max(0) as u64,
        })
    }

    /// Up to `limit` runs that ended at or after `since` (Unix ms), the
    /// latest first.
    pub fn finished_runs(&self, since: i64, limit: u32) -> Result<Vec<FinishedRun>> {
        self.conn
            .prepare_cached(
                "SELECT r.task_id, r.attempt, t.name, t.project, t.owner, r.started_at,
                        r.finished_at, r.class, r.exit_code, r.energy_j, r.cost, r.currency
                 FROM runs r JOIN tasks t ON t.id = r.task_id
                 WHERE r.state = 'finished' AND r.finished_at >= ?1
                 ORDER BY r.finished_at DESC, r.id DESC LIMIT ?2",
            )?
            .query_map(params![since, limit], |r| {
                Ok(FinishedRun {
                    task: r.get(0)?,
                    attempt: r.get(1)?,
                    name: r.get(2)?,
                    project: r.get(3)?,
                    owner: r.get(4)?,
                    started_at: r.get(5)?,
                    finished_at: r.get(6)?,
                    class: r.get(7)?,
                    exit_code: r.get(8)?,
                    energy_j: r.get(9)?,
                    cost: r.get(10)?,
                    currency: r.get(11)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests::{store, submit};

    #[test]
    fn a_page_of_the_queue_and_the_counts_of_all_of_it() {
        let (_d, mut s) = store();
        for i in 0..25 {
            submit(&mut s, &format!("name = \"t{i}\"\ncommand = \"true\"\n"));
        }
        let p = s.queue_page(10, 0).unwrap();
        assert_eq!(p.rows.len(), 10);
        assert_eq!((p.running, p.waiting, p.total()), (0, 25, 25));
        assert_eq!(p.rows[0].name, "t0");
        let last = s.queue_page(10, 20).unwrap();
        assert_eq!(last.rows.len(), 5);
        assert_eq!(last.rows[4].name, "t24");
        assert!(s.queue_page(10, 30).unwrap().rows.is_empty());
        assert!(s.finished_runs(0, 10).unwrap().is_empty());
    }
}
