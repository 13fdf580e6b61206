//! Which queued tasks may start now, in the built-in order or by id: the
//! scheduler's reads of the queue.

use std::collections::HashMap;

use rusqlite::params;

use std::sync::Arc;

use super::spec_cache::Stamp;
use super::{Candidate, Result, Store, StoreError};
use crate::task::model::TaskSpec;

/// SQL true when task `t` has a dependency that is not yet satisfied.
const UNSATISFIED: &str = "EXISTS (SELECT 1 FROM deps d JOIN tasks p ON p.id = d.dep_id
    WHERE d.task_id = t.id AND NOT (
        (d.kind = 'after-ok' AND p.state = 'succeeded') OR
        (d.kind = 'after-any' AND p.state IN ('succeeded', 'failed', 'cancelled'))))";

/// The columns a candidate is read from (`Row::read`); the spec itself is
/// read only when the cache does not hold it (`spec_cache.rs`).
const CANDIDATE_COLUMNS: &str = "t.id, t.submitted_at, t.attempts,
    MAX(t.submitted_at, COALESCE(t.not_before, 0),
        COALESCE((SELECT MAX(p.finished_at) FROM deps d JOIN tasks p ON p.id = d.dep_id
                  WHERE d.task_id = t.id), 0)),
    t.needs_gpu_free, t.priority, length(CAST(t.spec AS BLOB))";

/// SQL true when task `t` may start at `?1`: queued, past its backoff,
/// dependencies met.
fn eligible() -> String {
    format!(
        "t.state = 'queued' AND t.kind = 'task'
         AND (t.not_before IS NULL OR t.not_before <= ?1) AND NOT {UNSATISFIED}"
    )
}

/// The queue in the built-in order, `?2` rows from `?3` on: read from the
/// `tasks_queue` index alone, never the tasks' rows (the test below).
fn queue_sql() -> String {
    format!(
        "SELECT {CANDIDATE_COLUMNS} FROM tasks t
         WHERE {}
         ORDER BY t.priority DESC, t.submitted_at, t.id LIMIT ?2 OFFSET ?3",
        eligible()
    )
}

/// The tasks among the ids in `?2` (a JSON array) that may start at `?1`,
/// each looked up by its id: the ids drive the join (`CROSS JOIN` keeps
/// them outside), where `t.id IN (...)` had SQLite read every queued task's
/// index entry and filter, for each chunk of a pass's ranking.
fn by_ids_sql() -> String {
    format!(
        "SELECT {CANDIDATE_COLUMNS} FROM json_each(?2) AS j CROSS JOIN tasks t ON t.id = j.value
         WHERE {}",
        eligible()
    )
}

/// A candidate's row without its spec.
struct Row {
    id: i64,
    submitted_at: i64,
    attempts: i64,
    eligible_at: i64,
    needs_gpu_free: Option<u64>,
    stamp: Stamp,
}

impl Row {
    /// One row of `CANDIDATE_COLUMNS`.
    fn read(r: &rusqlite::Row) -> rusqlite::Result<Row> {
        Ok(Row {
            id: r.get(0)?,
            submitted_at: r.get(1)?,
            attempts: r.get(2)?,
            eligible_at: r.get(3)?,
            needs_gpu_free: r.get::<_, Option<i64>>(4)?.map(|b| b.max(0) as u64),
            stamp: Stamp {
                priority: r.get(5)?,
                bytes: r.get(6)?,
            },
        })
    }

    fn with(self, spec: Arc<TaskSpec>) -> Candidate {
        Candidate {
            id: self.id,
            spec,
            submitted_at: self.submitted_at,
            eligible_at: self.eligible_at,
            attempts: self.attempts,
            needs_gpu_free: self.needs_gpu_free,
        }
    }
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
        let rows: Vec<Row> = {
            let mut stmt = self.conn.prepare_cached(&queue_sql())?;
            stmt.query_map(params![now, limit as i64, offset as i64], Row::read)?
                .collect::<rusqlite::Result<_>>()?
        };
        self.with_specs(rows)
    }

    /// The tasks among `ids` that may start now, keyed by id: those still
    /// queued, past their backoff, with their dependencies met.
    pub fn candidates_by_ids(&self, now: i64, ids: &[i64]) -> Result<HashMap<i64, Candidate>> {
        let rows: Vec<Row> = {
            let mut stmt = self.conn.prepare_cached(&by_ids_sql())?;
            let ids = serde_json::to_string(ids)?;
            stmt.query_map(params![now, ids], Row::read)?
                .collect::<rusqlite::Result<_>>()?
        };
        Ok(self
            .with_specs(rows)?
            .into_iter()
            .map(|c| (c.id, c))
            .collect())
    }

    /// `rows` with their specs: from the cache, or read and decoded (and
    /// kept) where it has none or one decoded from an older spec.
    fn with_specs(&self, rows: Vec<Row>) -> Result<Vec<Candidate>> {
        let mut cache = self.specs.borrow_mut();
        let missing: Vec<i64> = rows
            .iter()
            .filter(|r| cache.get(r.id, r.stamp).is_none())
            .map(|r| r.id)
            .collect();
        if !missing.is_empty() {
            let mut stmt = self.conn.prepare_cached(
                "SELECT id, priority, spec FROM tasks WHERE id IN (SELECT value FROM json_each(?1))",
            )?;
            let ids = serde_json::to_string(&missing)?;
            let mut read = stmt.query([ids])?;
            while let Some(r) = read.next()? {
                let id: i64 = r.get(0)?;
                let text: String = r.get(2)?;
                let spec: TaskSpec = serde_json::from_str(&text).map_err(|e| {
                    StoreError::Invalid(format!(
                        "table tasks, row id {id}: its spec cannot be read ({e}); stop the daemon and run `nightjar daemon check`"
                    ))
                })?;
                let stamp = Stamp {
                    priority: r.get(1)?,
                    bytes: text.len() as i64,
                };
                cache.put(id, stamp, Arc::new(spec));
            }
        }
        if cache.grown() {
            let queued = {
                let mut stmt = self
                    .conn
                    .prepare_cached("SELECT id FROM tasks WHERE state = 'queued'")?;
                stmt.query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<std::collections::HashSet<i64>>>()?
            };
            cache.retain(&queued);
        }
        // A row rewritten or deleted between the two reads (only another
        // process could) goes with what the second read found.
        Ok(rows
            .into_iter()
            .filter_map(|r| cache.latest(r.id).map(|spec| r.with(spec)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite plans for `sql`, one step a line.
    fn plan(store: &Store, sql: &str, p: impl rusqlite::Params) -> String {
        let mut stmt = store
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        let steps = stmt.query_map(p, |r| r.get::<_, String>(3)).unwrap();
        steps.map(|s| s.unwrap()).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn a_pass_reads_the_waiting_tasks_from_the_queue_index_alone_not_their_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("nightjar.db")).unwrap();
        let plan = plan(&store, &queue_sql(), params![0, 100, 0]);
        let outer = plan.lines().next().unwrap_or_default();
        assert_eq!(
            outer, "SEARCH t USING COVERING INDEX tasks_queue (state=?)",
            "the whole plan:\n{plan}"
        );
        // The only other tables read are the dependency probes.
        for step in plan.lines().skip(1) {
            assert!(
                !step.contains("SCAN") && !step.contains("SEARCH t "),
                "a step reads the tasks' rows: {step}\nthe whole plan:\n{plan}"
            );
        }
    }

    #[test]
    fn a_chunk_of_the_ranking_is_looked_up_by_id_not_by_reading_the_whole_queue() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("nightjar.db")).unwrap();
        let plan = plan(&store, &by_ids_sql(), params![0, "[1, 2]"]);
        let steps: Vec<&str> = plan.lines().take(2).collect();
        assert!(
            steps.len() == 2
                && steps[0].starts_with("SCAN j VIRTUAL TABLE")
                && steps[1] == "SEARCH t USING INTEGER PRIMARY KEY (rowid=?)",
            "the ids first, then each task by its id; the whole plan:\n{plan}"
        );
    }
}
