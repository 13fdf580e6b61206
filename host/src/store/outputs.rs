//! Retention by outcome in the store: which ended runs' local outputs and
//! scratch are old enough to go, and marking them gone. Only runs of tasks
//! that have ended are looked at (a queued retry may resume from an
//! earlier attempt's checkpoint), and a succeeded run whose archive is not
//! yet verified is kept whatever its age.

use std::path::PathBuf;

use rusqlite::params;

use super::{Result, Store, exec};

/// When each outcome's outputs may go: runs that ended before these (Unix ms).
#[derive(Debug, Clone, Copy)]
pub struct OutputCutoffs {
    /// Succeeded, archive verified before this.
    pub archived: i64,
    /// Succeeded with no archive, ended before this.
    pub succeeded: i64,
    /// Failed, ended before this.
    pub failed: i64,
    /// Cancelled, ended before this.
    pub cancelled: i64,
}

/// A run whose local outputs and scratch may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredOutputs {
    /// The run.
    pub run: i64,
    /// Its folder.
    pub run_dir: PathBuf,
    /// Its output folder, if it had one.
    pub output: Option<PathBuf>,
    /// Its class (`ok`, `cancelled`, a failure's).
    pub class: String,
}

const EXPIRED: &str = "
SELECT r.id, r.run_dir, r.output, COALESCE(r.class, 'lost')
  FROM runs r INDEXED BY runs_outputs_kept
  JOIN tasks t ON t.id = r.task_id
  LEFT JOIN archives a ON a.run_id = r.id
 WHERE r.state = 'finished' AND r.outputs_removed_at IS NULL
   AND t.state IN ('succeeded', 'failed', 'cancelled')
   AND CASE
       WHEN r.class = 'ok' AND a.run_id IS NOT NULL THEN a.state = 'done' AND a.done_at <= ?1
       WHEN r.class = 'ok' THEN r.finished_at <= ?2
       WHEN r.class = 'cancelled' THEN r.finished_at <= ?4
       ELSE r.finished_at <= ?3
       END
 ORDER BY r.id LIMIT ?5";

impl Store {
    /// Runs whose outputs are past their cutoff, at most `limit`.
    pub fn expired_outputs(&self, c: &OutputCutoffs, limit: usize) -> Result<Vec<ExpiredOutputs>> {
        let mut stmt = self.conn.prepare_cached(EXPIRED)?;
        let rows = stmt.query_map(
            params![c.archived, c.succeeded, c.failed, c.cancelled, limit as i64],
            |r| {
                Ok(ExpiredOutputs {
                    run: r.get(0)?,
                    run_dir: PathBuf::from(r.get::<_, String>(1)?),
                    output: r.get::<_, Option<String>>(2)?.map(PathBuf::from),
                    class: r.get(3)?,
                })
            },
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Marks the local outputs of `runs` removed at `now`.
    pub fn outputs_removed(&mut self, runs: &[i64], now: i64) -> Result<()> {
        let tx = self.conn.transaction()?;
        for run in runs {
            exec(
                &tx,
                "UPDATE runs SET outputs_removed_at = ?2 WHERE id = ?1",
                params![run, now],
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}
