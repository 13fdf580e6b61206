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
    /// Its task's working folder.
    pub workdir: Option<PathBuf>,
    /// Its class (`ok`, `cancelled`, a failure's).
    pub class: String,
    /// Its task's owner (uid, name), as whom its own output folder goes.
    pub owner: Option<nightjar_core::task::model::Owner>,
}

/// Whether run `r` (of task `t`, archive `a`) is past its cutoff (?1-?4).
const PAST: &str = "r.state = 'finished' AND r.outputs_removed_at IS NULL
   AND t.state IN ('succeeded', 'failed', 'cancelled')
   AND CASE
       WHEN r.class = 'ok' AND a.run_id IS NOT NULL THEN a.state = 'done' AND a.done_at <= ?1
       WHEN r.class = 'ok' THEN r.finished_at <= ?2
       WHEN r.class = 'cancelled' THEN r.finished_at <= ?4
       ELSE r.finished_at <= ?3
       END";

/// Whether run ?5's outputs must stay after all: its task was queued again
/// since (a retry may resume from them), or another run not past its
/// cutoff has ?6 (the same folder, one inside it, or one holding it) as
/// its output folder: a running task sharing it, a newer success.
const NEEDED: &str = "
SELECT COALESCE((SELECT t.state NOT IN ('succeeded', 'failed', 'cancelled')
                   FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = ?5), 0)
    OR (?6 IS NOT NULL AND EXISTS (
        SELECT 1 FROM runs r JOIN tasks t ON t.id = r.task_id
          LEFT JOIN archives a ON a.run_id = r.id
         WHERE r.id != ?5 AND r.output IS NOT NULL AND r.outputs_removed_at IS NULL
           AND (r.output = ?6 OR substr(r.output, 1, length(?6) + 1) = ?6 || '/'
                OR substr(?6, 1, length(r.output) + 1) = r.output || '/')
           AND NOT (PAST)))";

impl Store {
    /// Runs whose outputs are past their cutoff, at most `limit`.
    pub fn expired_outputs(&self, c: &OutputCutoffs, limit: usize) -> Result<Vec<ExpiredOutputs>> {
        let sql = format!(
            "SELECT r.id, r.run_dir, r.output, json_extract(t.spec, '$.workdir'),
                    COALESCE(r.class, 'lost'), json_extract(t.spec, '$.owner.uid'),
                    json_extract(t.spec, '$.owner.name')
               FROM runs r INDEXED BY runs_outputs_kept
               JOIN tasks t ON t.id = r.task_id
               LEFT JOIN archives a ON a.run_id = r.id
              WHERE {PAST}
              ORDER BY r.id LIMIT ?5"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![c.archived, c.succeeded, c.failed, c.cancelled, limit as i64],
            |r| {
                Ok(ExpiredOutputs {
                    run: r.get(0)?,
                    run_dir: PathBuf::from(r.get::<_, String>(1)?),
                    output: r.get::<_, Option<String>>(2)?.map(PathBuf::from),
                    workdir: r.get::<_, Option<String>>(3)?.map(PathBuf::from),
                    class: r.get(4)?,
                    owner: match (r.get::<_, Option<u32>>(5)?, r.get::<_, Option<String>>(6)?) {
                        (Some(uid), name) => Some(nightjar_core::task::model::Owner {
                            uid,
                            name: name.unwrap_or_default(),
                        }),
                        _ => None,
                    },
                })
            },
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Whether run `run`'s outputs must stay after all, looked at right
    /// before they go: its task was queued again, or another run not past
    /// its cutoff shares `folder` (its task-chosen output folder).
    pub fn outputs_needed(
        &self,
        run: i64,
        folder: Option<&std::path::Path>,
        c: &OutputCutoffs,
    ) -> Result<bool> {
        let sql = NEEDED.replace("PAST", PAST);
        let folder = folder.map(|f| f.to_string_lossy().into_owned());
        Ok(self.conn.prepare_cached(&sql)?.query_row(
            params![c.archived, c.succeeded, c.failed, c.cancelled, run, folder],
            |r| r.get(0),
        )?)
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
