//! The audit log: administrative actions, appended and never changed (the
//! schema's triggers refuse UPDATE and DELETE), and a task's priority.

use rusqlite::params;

use super::{Result, Store, event, exec};
use crate::task::model::{Priority, TaskSpec};
use nightjar_core::api::audit::AuditRow;

/// What to append: who did what to which task.
#[derive(Debug, Clone)]
pub struct AuditEntry<'a> {
    /// Who: uid.
    pub uid: u32,
    /// Who: name.
    pub user: &'a str,
    /// What (a short verb: `cancel`, `priority`, ...).
    pub action: &'a str,
    /// The task, if any.
    pub task: Option<i64>,
    /// The rest, for a person.
    pub detail: String,
}

impl Store {
    /// Appends one entry.
    pub fn audit(&mut self, at: i64, e: &AuditEntry) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO audit (at, uid, user, action, task_id, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![at, e.uid, e.user, e.action, e.task, e.detail])?;
        Ok(())
    }

    /// The newest `limit` entries at or after `since`, oldest first. With
    /// `only` = (uid, the daemon's uid): that user's own acts and the acts on
    /// their tasks (tasks without an owner are the daemon's user's).
    pub fn audit_log(
        &self,
        since: Option<i64>,
        limit: u32,
        only: Option<(u32, u32)>,
    ) -> Result<Vec<AuditRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, at, uid, user, action, task_id, detail FROM
               (SELECT * FROM audit a WHERE at >= ?1
                  AND (?3 IS NULL OR a.uid = ?3
                       OR a.task_id IN (SELECT id FROM tasks
                                        WHERE owner_uid = ?3 OR (?3 = ?4 AND owner_uid IS NULL)))
                ORDER BY id DESC LIMIT ?2)
             ORDER BY id",
        )?;
        let (uid, daemon) = (only.map(|o| o.0), only.map(|o| o.1));
        let rows = stmt
            .query_map(
                params![since.unwrap_or(i64::MIN), limit, uid, daemon],
                |r| {
                    Ok(AuditRow {
                        id: r.get(0)?,
                        at: r.get(1)?,
                        uid: r.get(2)?,
                        user: r.get(3)?,
                        action: r.get(4)?,
                        task: r.get(5)?,
                        detail: r.get(6)?,
                    })
                },
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Sets the priority of a task and, for a sweep or recurring template,
    /// of its members that have not started; returns how many changed and
    /// the level before (of the task itself). One transaction.
    pub fn set_priority(&mut self, id: i64, p: Priority, now: i64) -> Result<(usize, Priority)> {
        let tx = self.conn.transaction()?;
        let (before, state): (i64, String) = tx
            .query_row(
                "SELECT priority, state FROM tasks WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => super::StoreError::NotFound(format!(
                    "no task with id {id}; `nightjar ls` lists them"
                )),
                e => e.into(),
            })?;
        // An ended task's record is what it ran with; a priority changes
        // only what has yet to start (a sweep's or template's waiting ones).
        if super::TaskState::parse(&state).is_some_and(super::TaskState::is_final) {
            return Err(super::StoreError::Invalid(format!(
                "task {id} has ended ({state}), so a priority changes nothing; `nightjar retry {id}` queues it again, then set its priority"
            )));
        }
        let ids: Vec<(i64, String)> = {
            let mut stmt = tx.prepare_cached(
                "SELECT id, spec FROM tasks WHERE id = ?1
                 OR (parent_id = ?1 AND state IN ('queued', 'held', 'blocked', 'scheduled'))",
            )?;
            stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?
        };
        for (task, spec) in &ids {
            let mut spec: TaskSpec = serde_json::from_str(spec)?;
            spec.priority = p;
            exec(
                &tx,
                "UPDATE tasks SET priority = ?1, spec = ?2 WHERE id = ?3",
                params![p.rank(), serde_json::to_string(&spec)?, task],
            )?;
        }
        let was = Priority::from_rank(before);
        event(
            &tx,
            now,
            Some(id),
            None,
            "priority",
            &format!("priority {} -> {}", was.as_str(), p.as_str()),
        )?;
        tx.commit()?;
        Ok((ids.len(), was))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_audit_log_is_append_only_and_reads_back_newest_last() {
        let (_dir, mut s) = super::super::tests::store();
        for i in 0..3 {
            s.audit(
                100 + i,
                &AuditEntry {
                    uid: 1001,
                    user: "alice",
                    action: "cancel",
                    task: Some(i),
                    detail: format!("task {i} of bob"),
                },
            )
            .unwrap();
        }
        let all = s.audit_log(None, 1000, None).unwrap();
        assert_eq!(
            all.iter().map(|r| r.at).collect::<Vec<_>>(),
            [100, 101, 102]
        );
        assert_eq!(s.audit_log(Some(101), 1000, None).unwrap().len(), 2);
        // Alice's own acts; bob sees none of them (no task of his named).
        assert_eq!(s.audit_log(None, 1000, Some((1001, 0))).unwrap().len(), 3);
        assert!(s.audit_log(None, 1000, Some((1002, 0))).unwrap().is_empty());
        let last = s.audit_log(None, 1, None).unwrap();
        assert_eq!(last[0].task, Some(2));
        let e = s.conn.execute("UPDATE audit SET user = 'mallory'", []);
        assert!(e.unwrap_err().to_string().contains("append-only"));
        let e = s.conn.execute("DELETE FROM audit", []);
        assert!(e.unwrap_err().to_string().contains("append-only"));
        assert_eq!(s.audit_log(None, 1000, None).unwrap().len(), 3);
    }
}
