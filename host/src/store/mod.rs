//! The durable store: one SQLite database in WAL mode. Every state transition
//! is one transaction; a claim can hand a task to one runner only.

pub mod adopt;
mod archive;
mod audit;
mod cache;
mod candidates;
mod checkpoint;
pub mod clock;
mod control;
mod deps;
mod digest;
mod estimate;
pub use estimate::Recent;
mod finish;
mod gauges;
mod gc;
mod give_back;
mod gpu;
mod history;
pub mod integrity;
mod listing;
mod manifest;
pub mod marks;
pub mod outbox;
pub mod outputs;
mod page;
mod policy;
mod query;
mod queue;
mod report;
mod schema;
mod spec_cache;
mod submit;
pub mod tokens;
pub mod types;
mod waits;
pub use audit::AuditEntry;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use thiserror::Error;

pub use archive::ArchiveJob;
pub use control::CancelEffect;
pub use finish::{EndContext, RunEnd};
pub use gauges::Gauges;
pub use nightjar_core::api::wire::{GcReport, ListFilter};
pub use outbox::{DeadLetter, NotifierState, OutboxEvent};
pub use page::{FinishedRun, QueuePage};
pub use policy::{RunningInfo, UsageInfo};
pub use queue::{Finished, NewRun, describe};
pub use report::{OpenWait, ReportRows, ReportRun, UtilBucket};
pub use types::*;

/// What can go wrong in the store, phrased for the person who has to act.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The database was written by a newer nightjar.
    #[error(
        "database {path} has schema version {found}, newer than this nightjar knows ({known}); run the newer nightjar or use another state dir. The database was not changed."
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The newest this binary knows.
        known: i64,
    },
    /// The file is not a database, or SQLite finds it damaged.
    #[error(
        "database {path} is damaged: {detail}. The daemon did not start and changed nothing. `nightjar daemon check --full` lists every fault; `nightjar daemon recover` moves the file aside and rebuilds the store from the run folders; or restore the file from a backup."
    )]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
    },
    /// A request names a task or run that is not there.
    #[error("{0}")]
    NotFound(String),
    /// A request asks for something not allowed (wrong state, bad input).
    #[error("{0}")]
    Invalid(String),
    /// SQLite failed.
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A stored spec could not be read back.
    #[error("stored task spec is corrupt: {0}")]
    Json(#[from] serde_json::Error),
}

/// Store results.
pub type Result<T> = std::result::Result<T, StoreError>;

/// An open store.
pub struct Store {
    conn: Connection,
    /// Queued tasks' specs, decoded once (`spec_cache.rs`).
    specs: std::cell::RefCell<spec_cache::SpecCache>,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and brings its schema
    /// up to date. A database from a newer version is refused untouched.
    pub fn open(path: &Path) -> Result<Store> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let found: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| damaged(path, e))?;
        let known = schema::MIGRATIONS.len() as i64;
        if found > known {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
                known,
            });
        }
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // After a checkpoint the WAL file is cut back to 4 MiB, so its
        // high-water mark does not stay on disk for ever.
        conn.pragma_update(None, "journal_size_limit", 4 << 20)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // 2 MiB of page cache (SQLite's default): a pass reads the queue
        // from the `tasks_queue` index alone (0.6 MB for 10,000 waiting
        // tasks), and the kernel keeps the file's other pages; 32 MiB held
        // 11 MB of a 10,000-task queue's pages for good (`scripts/bench rss`).
        conn.pragma_update(None, "cache_size", -2_048)?;
        tune(&conn)?;
        let mut store = Store {
            conn,
            specs: Default::default(),
        };
        store.migrate(found)?;
        Ok(store)
    }

    /// Runs the migrations past `from`, each in its own transaction. Foreign
    /// keys are off meanwhile (a migration may rebuild a table others refer
    /// to) and checked before each commit: a migration that would leave a
    /// dangling reference is rolled back and the database stays as it was.
    fn migrate(&mut self, from: i64) -> Result<()> {
        if from as usize >= schema::MIGRATIONS.len() {
            return Ok(());
        }
        self.conn.pragma_update(None, "foreign_keys", "OFF")?;
        let result = self.run_migrations(from);
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        result
    }

    fn run_migrations(&mut self, from: i64) -> Result<()> {
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(from as usize) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)?;
            let dangling: i64 = row(
                &tx,
                "SELECT count(*) FROM pragma_foreign_key_check",
                [],
                |r| r.get(0),
            )?;
            if dangling > 0 {
                return Err(StoreError::Invalid(format!(
                    "migration to schema version {} would leave {dangling} dangling reference(s); nothing was changed: report this with the database attached",
                    i + 1
                )));
            }
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(())
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64> {
        Ok(row(&self.conn, "PRAGMA user_version", [], |r| r.get(0))?)
    }
}

/// A failure reading the file's header as what it is: damage (a file that
/// is not a database, a corrupt page), or the SQL error it was.
fn damaged(path: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Damaged {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
        _ => StoreError::Sql(e),
    }
}

/// Runs a statement through the connection's statement cache, so the hot
/// paths (claim, finish, events) parse their SQL once.
fn exec<P: rusqlite::Params>(c: &Connection, sql: &str, p: P) -> rusqlite::Result<usize> {
    c.prepare_cached(sql)?.execute(p)
}

/// What every connection of the store is given: room for every statement
/// the daemon prepares, and plans that do not depend on bound values. With
/// the bundled SQLite's STAT4, a statement whose plan could depend on a
/// parameter (a range on an indexed column, a partial index) is compiled
/// again whenever that parameter is bound to a new value: a query asked at
/// every run's start with a new time each time was parsed and planned every
/// time. Our plans are pinned by hand (`INDEXED BY`) and the store runs no
/// `ANALYZE`, so nothing is lost by keeping them.
fn tune(conn: &Connection) -> Result<()> {
    conn.set_prepared_statement_cache_capacity(256);
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// Reads one row through the statement cache.
fn row<T, P: rusqlite::Params>(
    c: &Connection,
    sql: &str,
    p: P,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    c.prepare_cached(sql)?.query_row(p, f)
}

/// Records an event inside a transaction.
fn event(
    tx: &Transaction,
    at: i64,
    task: Option<i64>,
    run: Option<i64>,
    kind: &str,
    msg: &str,
) -> Result<()> {
    exec(
        tx,
        "INSERT INTO events (at, task_id, run_id, kind, message) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![at, task, run, kind, msg],
    )?;
    Ok(())
}

/// The state and kind of a task, or an error naming the id.
fn state_of(tx: &Transaction, id: i64) -> Result<(TaskState, TaskKind)> {
    let row: Option<(String, String)> = row(
        tx,
        "SELECT state, kind FROM tasks WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()?;
    let (state, kind) = row.ok_or_else(|| {
        StoreError::NotFound(format!("no task with id {id}; `nightjar ls` lists them"))
    })?;
    let state = TaskState::parse(&state)
        .ok_or_else(|| StoreError::Invalid(format!("task {id} has unknown state `{state}`")))?;
    let kind = TaskKind::parse(&kind)
        .ok_or_else(|| StoreError::Invalid(format!("task {id} has unknown kind `{kind}`")))?;
    Ok((state, kind))
}

#[cfg(test)]
mod listing_tests;
#[cfg(test)]
mod migration_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
pub(crate) mod tests;
