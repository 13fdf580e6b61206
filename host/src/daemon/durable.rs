//! What a client or a supervisor is told is on disk first. The database runs
//! with `synchronous = NORMAL` (a commit is in the WAL, not yet flushed), and
//! every reply, every supervisor start and every acknowledgement of a run's
//! end passes [`Daemon::durable`] first: one `fdatasync` of the WAL that
//! covers every commit made before it (group commit: callers that queue
//! behind a flush already covering them return at once; a reply with
//! nothing new to flush costs no system call). The store's marks are copied
//! to `nightjar.db.ids` on the way.
//!
//! The database file is also watched: deleted or replaced while the daemon
//! runs, it halts the daemon ([`Daemon::halt`]) within seconds.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::daemon::locks::gate;
use crate::daemon::state::Daemon;
use crate::store::marks::{Marks, MarksFile};

/// How often the database file's identity is looked at.
pub const WATCH_EVERY: Duration = Duration::from_secs(2);

/// The flush state: shared by every caller, taken one at a time.
pub struct Durable {
    db: PathBuf,
    /// The database file's (device, inode) when the daemon opened it.
    identity: (u64, u64),
    /// The newest ticket any caller asked to be covered.
    latest: AtomicU64,
    /// Every commit up to this ticket is on disk (read without the flush lock).
    synced: AtomicU64,
    flush: Mutex<Flush>,
}

struct Flush {
    /// The WAL, opened at the first flush (and again if it was recreated).
    wal: Option<(File, u64)>,
    marks: MarksFile,
}

impl Durable {
    /// Watches the database at `db` (open now) and keeps its marks' copy in `marks`.
    pub fn new(db: PathBuf, marks: MarksFile) -> std::io::Result<Durable> {
        let meta = std::fs::metadata(&db)?;
        Ok(Durable {
            db,
            identity: (meta.dev(), meta.ino()),
            latest: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            flush: Mutex::new(Flush { wal: None, marks }),
        })
    }

    /// Flushes every commit up to `ticket` (and the marks), unless a flush
    /// since covered it.
    fn sync(&self, ticket: u64, marks: Option<Marks>) -> std::io::Result<()> {
        self.latest.fetch_max(ticket, Ordering::SeqCst);
        let mut f = gate(&self.flush);
        if self.covers(ticket) {
            return Ok(());
        }
        // Every ticket registered by now was committed before it was.
        let target = self.latest.load(Ordering::SeqCst);
        if let Some(m) = marks
            && let Err(e) = f.marks.write(&m)
        {
            tracing::warn!("cannot write {}: {e}", f.marks.path().display());
        }
        self.wal_file(&mut f)?.sync_data()?;
        self.synced.fetch_max(target, Ordering::SeqCst);
        Ok(())
    }

    /// Whether every commit up to `ticket` is on disk already.
    fn covers(&self, ticket: u64) -> bool {
        self.synced.load(Ordering::SeqCst) >= ticket
    }

    /// The WAL as it is now: SQLite recreates it after the last connection
    /// closes, so a descriptor on an old inode is replaced.
    fn wal_file<'a>(&self, f: &'a mut Flush) -> std::io::Result<&'a File> {
        let mut path = self.db.clone().into_os_string();
        path.push("-wal");
        let now = std::fs::metadata(&path).map(|m| m.ino()).ok();
        let stale = match (&f.wal, now) {
            (Some((_, ino)), Some(n)) => *ino != n,
            (None, _) => true,
            (Some(_), None) => true,
        };
        if stale {
            f.wal = Some(match now {
                Some(ino) => (File::open(&path)?, ino),
                // No WAL: every commit is in the main file.
                None => (File::open(&self.db)?, 0),
            });
        }
        Ok(&f.wal.as_ref().expect("set above").0)
    }

    /// Why the database file is no longer the one the daemon opened, if it is not.
    pub fn gone(&self) -> Option<String> {
        match std::fs::metadata(&self.db) {
            Ok(m) if (m.dev(), m.ino()) == self.identity => None,
            Ok(_) => Some(format!(
                "database {} was replaced by another file while the daemon ran",
                self.db.display()
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!(
                "database {} was deleted while the daemon ran",
                self.db.display()
            )),
            Err(e) => Some(format!(
                "database {} cannot be looked at: {e}",
                self.db.display()
            )),
        }
    }
}

impl Daemon {
    /// Makes every commit so far durable before the caller tells anyone of
    /// it (a reply, a supervisor started, a run's end acknowledged). A
    /// failed flush halts the daemon: what it would say might not survive.
    pub fn durable(&self) -> bool {
        if self.flushed() {
            return self.halted().is_none();
        }
        let (ticket, marks) = {
            let s = self.store();
            (s.ticket(), s.marks().ok())
        };
        match self.durability.sync(ticket, marks) {
            Ok(()) => self.halted().is_none(),
            Err(e) => {
                self.halt(format!(
                    "cannot flush the database's log ({e}); nothing more is started or acknowledged"
                ));
                false
            }
        }
    }

    /// Whether every commit so far is on disk already (then
    /// [`Daemon::durable`] makes no system call).
    pub fn flushed(&self) -> bool {
        let ticket = self.store().ticket();
        self.durability.covers(ticket)
    }

    /// Whether the daemon halted, and why.
    pub fn halted(&self) -> Option<&str> {
        self.halt_reason.get().map(String::as_str)
    }

    /// Stops for good: nothing more is started, every request is answered
    /// with `reason`, runs' ends are left in their folders for the next
    /// daemon. Running tasks keep running.
    pub fn halt(&self, reason: String) {
        if self.halt_reason.set(reason.clone()).is_ok() {
            tracing::error!(
                "halted: {reason}. Running tasks keep running; stop this daemon, restore the database or run `nightjar daemon recover`, then start it again"
            );
            self.draining.store(true, Ordering::SeqCst);
            self.kick.notify();
        }
    }

    /// Looks at the database file every [`WATCH_EVERY`] and halts the
    /// daemon once it was deleted or replaced.
    pub async fn watch_database(self: std::sync::Arc<Self>) {
        let mut tick = tokio::time::interval(WATCH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Some(why) = self.durability.gone() {
                self.halt(why);
                return;
            }
        }
    }
}
