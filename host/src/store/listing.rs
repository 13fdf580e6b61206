//! `ls`: the rows a filter matches, all of them or a limited page of the
//! ones that matter most, and how many rows it matches by state.

use rusqlite::ToSql;

use super::query::{TASK_COLUMNS, daemon_user, task_row};
use super::{ListFilter, Result, Store, TaskKind, TaskRow, TaskState};
use nightjar_core::api::StateCount;

/// The rows `ls` lists: top-level tasks (sweep members are folded into
/// their sweep's counts; with a state filter, members in that state are
/// listed themselves, so `ls --state held` finds a held member). Binds
/// ?1 state, ?2 project, ?3 all, ?4 since, ?5 user, ?6 the daemon's user.
const LISTED: &str = "(t.parent_id IS NULL
        OR t.parent_id IN (SELECT id FROM tasks WHERE kind = 'recurring')
        OR (?1 IS NOT NULL AND t.kind = 'task'))
    AND (?1 IS NULL OR t.state = ?1)
    AND (?2 IS NULL OR t.project = ?2)
    AND (?3 OR t.finished_at IS NULL OR t.finished_at >= ?4)
    AND (?5 IS NULL OR COALESCE(t.owner, ?6) = ?5)";

/// Which rows a limit keeps: the running ones, then the waiting ones
/// oldest first (roughly the order they will start in), then the ended
/// ones newest first. A sweep's own row stays `sweep` with no end time, so
/// its members say where it goes: running while one of them runs, ended
/// once all have ended. Only ids and states are read to choose.
const KEEP_GROUP: &str = "CASE
        WHEN t.state = 'running' THEN 0
        WHEN t.kind != 'sweep' THEN CASE WHEN t.finished_at IS NULL THEN 1 ELSE 2 END
        WHEN EXISTS (SELECT 1 FROM tasks m WHERE m.parent_id = t.id AND m.state = 'running')
            THEN 0
        WHEN EXISTS (SELECT 1 FROM tasks m WHERE m.parent_id = t.id AND m.finished_at IS NULL)
            THEN 1
        ELSE 2 END";

/// [`LISTED`]'s six parameters.
fn bound<'a>(f: &'a ListFilter, state: &'a Option<&'static str>) -> [&'a dyn ToSql; 6] {
    [state, &f.project, &f.all, &f.since, &f.user, daemon_user()]
}

impl Store {
    /// The rows `f` matches, by id; with `limit`, at most that many (the
    /// running tasks first, then the oldest waiting, then the newest ended:
    /// the whole rows are read only for those kept).
    pub fn list(&self, f: &ListFilter, limit: Option<u32>) -> Result<Vec<TaskRow>> {
        let state = f.state.map(|s| s.as_str());
        let mut bound = bound(f, &state).to_vec();
        let sql = match &limit {
            None => format!("SELECT {TASK_COLUMNS} FROM tasks t WHERE {LISTED} ORDER BY t.id"),
            Some(n) => {
                bound.push(n);
                format!(
                    "SELECT {TASK_COLUMNS} FROM tasks t WHERE t.id IN
                       (SELECT id FROM (SELECT t.id AS id, {KEEP_GROUP} AS keep
                                        FROM tasks t WHERE {LISTED})
                        ORDER BY keep, CASE WHEN keep = 2 THEN -id ELSE id END LIMIT ?7)
                     ORDER BY t.id"
                )
            }
        };
        let mut rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map(bound.as_slice(), task_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        for row in rows.iter_mut().filter(|r| r.kind == TaskKind::Sweep) {
            row.counts = Some(self.counts(row.id)?);
        }
        Ok(rows)
    }

    /// How many rows `f` matches, by state (states with none left out),
    /// in the order of [`TaskState`]'s stored names.
    pub fn list_count(&self, f: &ListFilter) -> Result<Vec<StateCount>> {
        let sql = format!(
            "SELECT t.state, COUNT(*) FROM tasks t WHERE {LISTED} GROUP BY t.state ORDER BY t.state"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let state = f.state.map(|s| s.as_str());
        let counted = stmt.query_map(&bound(f, &state)[..], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?))
        })?;
        let mut out = Vec::new();
        for c in counted {
            let (state, count) = c?;
            // A state this build does not know (a newer daemon's row) is
            // counted as failed, as a listed row with it shows.
            let state = TaskState::parse(&state).unwrap_or(TaskState::Failed);
            match out.iter_mut().find(|c: &&mut StateCount| c.state == state) {
                Some(c) => c.count += count,
                None => out.push(StateCount { state, count }),
            }
        }
        Ok(out)
    }
}
