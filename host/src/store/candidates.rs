//! Which queued tasks may start now, in the built-in order or by id: the
//! scheduler's reads of the queue.

use std::collections::HashMap;

use rusqlite::params;

use super::{Candidate, Result, Store, StoreError};
use crate::task::model::TaskSpec;

/// SQL true when task `t` has a dependency that is not yet satisfied.
const UNSATISFIED: &str = "EXISTS (SELECT 1 FROM deps d JOIN tasks p ON p.id = d.dep_id
    WHERE d.task_id = t.id AND NOT (
        (d.kind = 'after-ok' AND p.state = 'succeeded') OR
        (d.kind = 'after-any' AND p.state IN ('succeeded', 'failed', 'cancelled'))))";

/// The columns a candidate is read from (`candidate_row`).
const CANDIDATE_COLUMNS: &str = "t.id, t.spec, t.submitted_at, t.attempts,
    MAX(t.submitted_at, COALESCE(t.not_before, 0),
        COALESCE((SELECT MAX(p.finished_at) FROM deps d JOIN tasks p ON p.id = d.dep_id
                  WHERE d.task_id = t.id), 0)),
    t.needs_gpu_free";

/// SQL true when task `t` may start at `?1`: queued, past its backoff,
/// dependencies met.
fn eligible() -> String {
    format!(
        "t.state = 'queued' AND t.kind = 'task'
         AND (t.not_before IS NULL OR t.not_before <= ?1) AND NOT {UNSATISFIED}"
    )
}

/// One candidate from a row of `CANDIDATE_COLUMNS` (the spec parsed).
fn candidate_row(r: &rusqlite::Row) -> rusqlite::Result<Result<Candidate>> {
    let spec: String = r.get(1)?;
    Ok(serde_json::from_str::<TaskSpec>(&spec)
        .map_err(StoreError::from)
        .and_then(|spec| {
            Ok(Candidate {
                id: r.get(0)?,
                spec,
                submitted_at: r.get(2)?,
                attempts: r.get(3)?,
                eligible_at: r.get(4)?,
                needs_gpu_free: r.get::<_, Option<i64>>(5)?.map(|b| b.max(0) as u64),
            })
        }))
}

/// Whether `task` may start at `now`, read inside the caller's transaction.
pub(super) fn may_start(c: &rusqlite::Connection, task: i64, now: i64) -> Result<bool> {
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM tasks t WHERE t.id = ?2 AND {})",
        eligible()
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![now, task], |r| r.get(0))?)
}

impl Store {
    /// Queued tasks whose dependencies are met and whose backoff has passed,
    /// in the built-in order: priority, then submit time. At most `limit`,
    /// after skipping `offset` (for paging through tasks that did not fit).
    pub fn candidates(&self, now: i64, limit: usize, offset: usize) -> Result<Vec<Candidate>> {
        let sql = format!(
            "SELECT {CANDIDATE_COLUMNS} FROM tasks t
             WHERE {}
             ORDER BY t.priority DESC, t.submitted_at, t.id LIMIT ?2 OFFSET ?3",
            eligible()
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![now, limit as i64, offset as i64], candidate_row)?;
        rows.map(|r| r?).collect()
    }

    /// The tasks among `ids` that may start now, keyed by id: those still
    /// queued, past their backoff, with their dependencies met.
    pub fn candidates_by_ids(&self, now: i64, ids: &[i64]) -> Result<HashMap<i64, Candidate>> {
        let sql = format!(
            "SELECT {CANDIDATE_COLUMNS} FROM tasks t
             WHERE {} AND t.id IN (SELECT value FROM json_each(?2))",
            eligible()
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let ids = serde_json::to_string(ids)?;
        let rows = stmt.query_map(params![now, ids], candidate_row)?;
        rows.map(|r| r?.map(|c| (c.id, c))).collect()
    }
}
