//! What a metrics scrape reads of the store (`GET /metrics`): tasks by
//! state and project, the notifiers' backlog, the archive's backlog. Each
//! one statement on the reader's connection.

use super::{Result, Store};

/// The store's side of a metrics scrape.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Gauges {
    /// Tasks (sweep members, not their sweep's row) by state and project: how many.
    pub tasks: Vec<(String, String, u64)>,
    /// Deliveries waiting: each notifier's events past its cursor, summed.
    pub outbox_pending: u64,
    /// Dead letters not requeued or delivered since.
    pub outbox_dead: u64,
    /// Runs whose archive is pending.
    pub archive_backlog: u64,
}

impl Store {
    /// The store's side of a metrics scrape.
    pub fn gauges(&self) -> Result<Gauges> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT state, project, COUNT(*) FROM tasks WHERE kind != 'sweep'
             GROUP BY state, project",
        )?;
        let tasks = stmt
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?.max(0) as u64))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let count = |sql: &str| -> Result<u64> {
            Ok(self.conn.query_row(sql, [], |r| r.get::<_, i64>(0))?.max(0) as u64)
        };
        Ok(Gauges {
            tasks,
            outbox_pending: count(
                "SELECT COALESCE(SUM((SELECT COUNT(*) FROM outbox o WHERE o.id > n.cursor)), 0)
                 FROM notifiers n",
            )?,
            outbox_dead: count("SELECT COUNT(*) FROM dead_letters WHERE state = 'dead'")?,
            archive_backlog: count(
                "SELECT COUNT(*) FROM archives INDEXED BY archives_due WHERE state = 'pending'",
            )?,
        })
    }
}
