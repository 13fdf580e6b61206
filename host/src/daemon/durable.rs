//! What a client or a supervisor is told is on disk first. The database runs
//! with `synchronous = NORMAL` (a commit is in the WAL, not yet flushed), and
//! every reply, every supervisor start and every acknowledgement of a run's
//! end passes [`Daemon::durable`] first: one `fdatasync` of the WAL that
//! covers every commit made before it (group commit: callers that queue
//! behind a flush already covering them return at once; a reply with
//! nothing new to flush costs no system call). The store's marks are copied
//! to `nightjar.db.ids` on the way.
//!
//! A run's end is acknowledged through [`Daemon::durable_soon`]: it waits a
//! few milliseconds for a flush someone else makes anyway (the start its
//! freed slot lets the pass make, or the next reply) before making its
//! own, so a busy run path pays one `fdatasync` per run, not two. Only the
//! supervisor's acknowledgement waits; the slot is free before it.
//!
//! The database file is also watched: deleted or replaced while the daemon
//! runs, it halts the daemon ([`Daemon::halt`]) within seconds.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::daemon::locks::{gate, leaf};
use crate::daemon::state::Daemon;
use crate::store::marks::{Marks, MarksFile};

/// How often the database file's identity is looked at.
pub const WATCH_EVERY: Duration = Duration::from_secs(2);

/// How long a run's acknowledged end waits for a flush that covers it
/// before it flushes itself: longer than a pass's claim and start take
/// (a millisecond or two), short beside a supervisor's life.
pub const END_WINDOW: Duration = Duration::from_millis(20);

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
    /// Told after each flush (its flag is a leaf: nothing is taken under it).
    flushed: (Mutex<()>, Condvar),
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
            flushed: (Mutex::new(()), Condvar::new()),
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
        drop(f);
        let _told = leaf(&self.flushed.0);
        self.flushed.1.notify_all();
        Ok(())
    }

    /// Waits until a flush covers `ticket` or `within` passes; whether one did.
    fn wait_covered(&self, ticket: u64, within: Duration) -> bool {
        // Registered: a flush that starts from now on covers it.
        self.latest.fetch_max(ticket, Ordering::SeqCst);
        let until = Instant::now() + within;
        let mut told = leaf(&self.flushed.0);
        loop {
            if self.covers(ticket) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            told = match self.flushed.1.wait_timeout(told, left) {
                Ok((g, _)) => g,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
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

    /// As [`Daemon::durable`], but first waits up to `within` for a flush
    /// another caller makes anyway (group commit across time: a run's end
    /// acknowledged with the next start's or reply's flush). For callers
    /// whose wait delays no one (a supervisor's acknowledgement); never a
    /// reply to a client or a start.
    pub fn durable_soon(&self, within: Duration) -> bool {
        let ticket = self.store().ticket();
        if self.durability.wait_covered(ticket, within) {
            return self.halted().is_none();
        }
        self.durable()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn durable(dir: &std::path::Path) -> Durable {
        let db = dir.join("nightjar.db");
        std::fs::write(&db, b"").expect("db file");
        let marks = MarksFile::open(&dir.join("nightjar.db.ids")).expect("marks file");
        Durable::new(db, marks).expect("durable")
    }

    #[test]
    fn an_end_waiting_for_a_flush_is_covered_by_the_next_one_made_by_someone_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = Arc::new(durable(dir.path()));
        let other = Arc::clone(&d);
        let flusher = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            // A later commit's flush (its ticket is past the waiter's).
            other.sync(8, None).expect("flush");
        });
        assert!(d.wait_covered(7, Duration::from_secs(30)));
        flusher.join().expect("flusher");
        assert!(d.covers(8));
    }

    #[test]
    fn an_end_no_one_flushes_for_is_not_covered_once_its_window_passes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = durable(dir.path());
        d.sync(3, None).expect("flush");
        assert!(
            d.wait_covered(3, Duration::from_millis(5)),
            "already on disk"
        );
        let t = Instant::now();
        assert!(!d.wait_covered(4, Duration::from_millis(20)));
        assert!(
            t.elapsed() >= Duration::from_millis(20),
            "waited its window"
        );
        // Then it makes its own.
        d.sync(4, None).expect("flush");
        assert!(d.covers(4));
    }
}
