//! What `nightjar report` reads from the store: the runs that matter to a
//! period (each read once, in one statement, from the covering index
//! `runs_report`), the waits no run ended, the
//! GPU series summed into buckets as it is read, and the last stated reason
//! of a few long waits. The arithmetic is `crate::report`'s.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::{Result, Store, StoreError, schema};

/// One run as the report reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRun {
    /// Its task.
    pub task: i64,
    /// Attempt number (1 for the first run).
    pub attempt: i64,
    /// The task's name.
    pub name: String,
    /// The task's project.
    pub project: String,
    /// When the task was submitted (Unix ms).
    pub submitted_at: i64,
    /// When this run became ready to start (Unix ms): submit, the end of a
    /// retry's backoff, or the last dependency's end (`runs.eligible_at`).
    pub eligible_at: i64,
    /// Started (Unix ms).
    pub started_at: i64,
    /// Ended (Unix ms); none while it runs.
    pub finished_at: Option<i64>,
    /// How it ended (`ok`, `app-error`, ...); none while it runs.
    pub class: Option<String>,
    /// How many GPUs it held.
    pub gpus: u32,
    /// Which (their indices; a cluster run's are its node's).
    pub gpu_ids: Vec<u32>,
    /// Energy used, joules (none on rows older than energy accounting).
    pub energy_j: Option<f64>,
    /// How the energy was measured (`counter`, `integrated`, `rapl`, `estimate`).
    pub energy_source: Option<String>,
    /// Its stored cost.
    pub cost: Option<f64>,
    /// The stored cost's currency.
    pub currency: Option<String>,
    /// The task's owner (a task from before owners: the daemon's user).
    pub owner: String,
}

/// A wait that no run of the rows ended: a task still waiting (`until`
/// none), or one that ended without starting again (cancelled, rejected).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenWait {
    /// Waiting since: submit, or its last run's end (Unix ms).
    pub since: i64,
    /// Until the task ended, if it has.
    pub until: Option<i64>,
}

/// One GPU's samples in one bucket of the series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UtilBucket {
    /// GPU index.
    pub gpu: u32,
    /// Bucket number from the period's start.
    pub bucket: i64,
    /// Sum of the samples' utilisation, percent.
    pub util_sum: f64,
    /// Number of samples.
    pub samples: u64,
}

/// Everything a report needs from the store, read in one read transaction.
#[derive(Debug, Clone, Default)]
pub struct ReportRows {
    /// Runs that ended at or after the period's start, and runs in progress.
    pub runs: Vec<ReportRun>,
    /// Waits not ended by any of `runs`.
    pub open_waits: Vec<OpenWait>,
    /// GPU utilisation per bucket, from `run_gpu_series`.
    pub gpu_util: Vec<UtilBucket>,
}

/// The run columns `report_run` reads.
const RUN_COLUMNS: &str = "r.task_id, r.attempt, t.name, t.project, t.submitted_at, r.eligible_at,
    r.started_at, r.finished_at, r.class, r.gpus, r.energy_j, r.energy_source, r.cost, r.currency,
    t.owner";

fn report_run(r: &rusqlite::Row) -> rusqlite::Result<ReportRun> {
    let gpus: Option<String> = r.get(9)?;
    Ok(ReportRun {
        task: r.get(0)?,
        attempt: r.get(1)?,
        name: r.get(2)?,
        project: r.get(3)?,
        submitted_at: r.get(4)?,
        eligible_at: r.get(5)?,
        started_at: r.get(6)?,
        finished_at: r.get(7)?,
        class: r.get(8)?,
        gpus: gpus.as_deref().map_or(0, |g| {
            g.split(',').filter(|s| !s.trim().is_empty()).count() as u32
        }),
        gpu_ids: gpus.as_deref().map_or_else(Vec::new, |g| {
            g.split(',').filter_map(|s| s.trim().parse().ok()).collect()
        }),
        energy_j: r.get(10)?,
        energy_source: r.get(11)?,
        cost: r.get(12)?,
        currency: r.get(13)?,
        owner: r
            .get::<_, Option<String>>(14)?
            .unwrap_or_else(|| super::query::daemon_user().to_string()),
    })
}

impl Store {
    /// Opens the database at `path` read-only, for long reads (a report)
    /// that must not hold the daemon's store lock: in WAL mode they see one
    /// snapshot while the daemon keeps writing. The schema must be the one
    /// this binary knows (the daemon migrated it when it opened).
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let known = schema::MIGRATIONS.len() as i64;
        if found != known {
            return Err(StoreError::Invalid(format!(
                "database {} has schema version {found}, this nightjar reads version {known}",
                path.display()
            )));
        }
        conn.pragma_update(None, "cache_size", -32_768)?;
        // Pages straight from the kernel's cache, not copied into ours (a
        // fresh connection starts with an empty cache). The daemon never
        // shrinks the file (no VACUUM), the one hazard of a mapping.
        conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
        super::tune(&conn)?;
        Ok(Store {
            conn,
            specs: Default::default(),
        })
    }

    /// The rows of a report of `[from, to)` whose series has buckets of
    /// `bucket_ms` (at least 1) from `from`.
    pub fn report_rows(&self, from: i64, to: i64, bucket_ms: i64) -> Result<ReportRows> {
        // One snapshot for every statement.
        let tx = self.conn.unchecked_transaction()?;
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs r INDEXED BY runs_report JOIN tasks t ON t.id = r.task_id
             WHERE r.state = 'finished' AND r.finished_at >= ?1
             UNION ALL
             SELECT {RUN_COLUMNS} FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.state = 'running'"
        );
        let runs = tx
            .prepare(&sql)?
            .query_map([from], report_run)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        // Tasks waiting now, or that ended in the period without a run
        // ending them (cancelled while waiting, rejected by a policy).
        let open_waits = tx
            .prepare(
                "SELECT MAX(t.submitted_at, COALESCE((SELECT MAX(r.finished_at) FROM runs r
                                                       WHERE r.task_id = t.id), 0)),
                        CASE WHEN t.state IN ('failed', 'cancelled') THEN t.finished_at END
                 FROM tasks t
                 WHERE t.kind = 'task' AND t.submitted_at < ?2
                   AND (t.state IN ('queued', 'held', 'blocked')
                        OR (t.state IN ('failed', 'cancelled') AND t.finished_at >= ?1))",
            )?
            .query_map(params![from, to], |r| {
                Ok(OpenWait {
                    since: r.get(0)?,
                    until: r.get(1)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        // Summed here rather than by GROUP BY: SQLite would sort every
        // sample to group them (0.6 s of 0.7 s for 1.3 million samples);
        // stepping through them in table order into a few hundred sums is
        // the scan alone.
        let bucket_ms = bucket_ms.max(1);
        let mut sums: HashMap<(u32, i64), (f64, u64)> = HashMap::new();
        let mut stmt = tx.prepare(
            "SELECT gpu, at, util FROM run_gpu_series INDEXED BY run_gpu_series_at
             WHERE at >= ?1 AND at < ?2",
        )?;
        let mut samples = stmt.query(params![from, to])?;
        while let Some(r) = samples.next()? {
            let (gpu, at, util): (u32, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
            let sum = sums.entry((gpu, (at - from) / bucket_ms)).or_default();
            sum.0 += util as f64;
            sum.1 += 1;
        }
        let gpu_util = sums
            .into_iter()
            .map(|((gpu, bucket), (util_sum, samples))| UtilBucket {
                gpu,
                bucket,
                util_sum,
                samples,
            })
            .collect();
        Ok(ReportRows {
            runs,
            open_waits,
            gpu_util,
        })
    }

    /// The last reason each task was given for waiting between `ready` and
    /// `started`, for `(task, ready, started)`: its last `waiting`, `held`
    /// or `blocked` event in that time (not the note that no policy defers
    /// it any more), else the last deferring verdict a policy stored for it
    /// by `started`. Waiting events are budgeted (`waiting-events-dropped`),
    /// so a wait may have no reason; so may one that waited for a free GPU.
    pub fn wait_reasons(&self, waits: &[(i64, i64, i64)]) -> Result<Vec<Option<String>>> {
        let mut event = self.conn.prepare_cached(
            "SELECT message FROM events INDEXED BY events_task
             WHERE task_id = ?1 AND kind IN ('waiting', 'held', 'blocked') AND at >= ?2 AND at <= ?3
               AND message <> 'no policy defers it'
             ORDER BY at DESC, id DESC LIMIT 1",
        )?;
        let mut verdict = self.conn.prepare_cached(
            "SELECT plugin || ': ' || reason FROM policy_verdicts
             WHERE task_id = ?1 AND verdict = 'defer' AND since <= ?2
             ORDER BY since DESC, plugin LIMIT 1",
        )?;
        let mut out = Vec::with_capacity(waits.len());
        for &(task, ready, started) in waits {
            let mut why: Option<String> = event
                .query_row(params![task, ready, started], |r| r.get(0))
                .optional()?;
            if why.is_none() {
                why = verdict
                    .query_row(params![task, started], |r| r.get(0))
                    .optional()?;
            }
            out.push(why);
        }
        Ok(out)
    }
}
