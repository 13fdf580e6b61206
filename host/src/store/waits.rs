//! What a task waits for after a run's end held it back: free GPU memory
//! after a gpu-oom, room on the disk after a disk-full run (recorded with
//! the end, `finish.rs`; read and released here).

use super::{Result, Store, event, exec, row};
use crate::postrun::retry::DiskWait;

impl Store {
    /// The free GPU memory task `task` waits for after a gpu-oom, if any.
    pub fn needs_gpu_free(&self, task: i64) -> Result<Option<u64>> {
        let b: Option<i64> = row(
            &self.conn,
            "SELECT needs_gpu_free FROM tasks WHERE id = ?1",
            [task],
            |r| r.get(0),
        )?;
        Ok(b.map(|b| b.max(0) as u64))
    }

    /// Tasks held after a disk-full run, with what they wait for.
    pub fn held_for_disk(&self) -> Result<Vec<(i64, DiskWait)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, held_for_disk FROM tasks WHERE state = 'held' AND held_for_disk IS NOT NULL",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, j)| serde_json::from_str(&j).ok().map(|w| (id, w)))
            .collect())
    }

    /// Releases a task held for disk room, now that there is some.
    pub fn release_disk_hold(&mut self, task: i64, now: i64, message: &str) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let n = exec(
            &tx,
            "UPDATE tasks SET state = 'queued', reason = NULL, held_for_disk = NULL
             WHERE id = ?1 AND state = 'held' AND held_for_disk IS NOT NULL",
            [task],
        )?;
        if n > 0 {
            event(&tx, now, Some(task), None, "released", message)?;
        }
        tx.commit()?;
        Ok(n > 0)
    }
}
