//! The result cache's records: each run's cache key, the earlier runs a
//! key finds, and the tasks that must run for real (`--no-cache`).

use rusqlite::{OptionalExtension, params};

use super::{Result, Store, exec};

/// An earlier successful run with the same cache key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSource {
    /// The run.
    pub run: i64,
    /// Its output folder, if it had one.
    pub output: Option<String>,
}

/// Earlier successful runs with key `?1`, newest first: through the
/// partial index `runs_cache`, never a walk of every run.
pub(super) const SOURCES_SQL: &str = "SELECT id, output FROM runs INDEXED BY runs_cache
     WHERE cache_key = ?1 AND class = 'ok' AND state = 'finished'
       AND outputs_removed_at IS NULL
     ORDER BY finished_at DESC LIMIT ?2";

/// Most earlier runs one lookup considers (the newest first).
const SOURCES: usize = 8;

impl Store {
    /// Records the cache key of `run` (tasks that opted in, with a key).
    pub fn set_run_cache_key(&self, run: i64, key: &str) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE runs SET cache_key = ?1 WHERE id = ?2",
            params![key, run],
        )?;
        Ok(())
    }

    /// Earlier runs that succeeded with this cache key and whose outputs
    /// retention has not removed, newest first.
    pub fn cache_sources(&self, key: &str) -> Result<Vec<CacheSource>> {
        let mut stmt = self.conn.prepare_cached(SOURCES_SQL)?;
        let rows = stmt
            .query_map(params![key, SOURCES as i64], |r| {
                Ok(CacheSource {
                    run: r.get(0)?,
                    output: r.get(1)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Whether `task` must run for real (`submit --no-cache`, `retry --no-cache`).
    pub fn cache_bypass(&self, task: i64) -> Result<bool> {
        let v: Option<bool> = self
            .conn
            .query_row(
                "SELECT cache_bypass FROM tasks WHERE id = ?1",
                [task],
                |r| r.get(0),
            )
            .optional()?;
        Ok(v.unwrap_or(false))
    }

    /// Marks `run` as completed from `from` by the result cache.
    pub fn set_run_cached_from(&self, run: i64, from: i64) -> Result<()> {
        exec(
            &self.conn,
            "UPDATE runs SET cached_from = ?1 WHERE id = ?2",
            params![from, run],
        )?;
        Ok(())
    }
}
