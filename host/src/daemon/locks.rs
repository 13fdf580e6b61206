//! The daemon's one lock rule, checked rather than remembered: a thread
//! never holds two of the daemon's locks at once (so no order between them
//! can be inverted, and no two threads can wait on each other). Every lock
//! of [`super::Daemon`] is taken through [`lock`] (the store through
//! `Daemon::store`), which notes where the thread took it; taking a second
//! one while the first is held is a bug: a debug build (every test run,
//! the whole end-to-end suite included) panics naming both places; a
//! release build logs it once and goes on. With `NIGHTJAR_LOCK_AUDIT=FILE`
//! in its environment a daemon appends each one to FILE and goes on (to
//! list every nesting in one run of the suite).

use crate::sync::LockUnpoisoned;
use std::cell::Cell;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

thread_local! {
    /// Where this thread took the daemon lock it holds, if it holds one.
    static HELD: Cell<Option<&'static Location<'static>>> = const { Cell::new(None) };
}

/// A daemon lock, held: the mutex's guard, and this thread's note of it.
pub struct Guard<'a, T> {
    inner: MutexGuard<'a, T>,
    /// Where the lock it replaced in the note was taken (a release build
    /// that went on after a violation puts it back).
    outer: Option<&'static Location<'static>>,
}

impl<T> std::ops::Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> std::ops::DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        HELD.with(|h| h.set(self.outer));
    }
}

/// Locks one of the daemon's mutexes, recovering from a poisoned one
/// (state stays usable); checks that this thread holds no other.
#[track_caller]
pub fn lock<T>(m: &Mutex<T>) -> Guard<'_, T> {
    let here = Location::caller();
    let outer = HELD.with(Cell::get);
    if let Some(at) = outer {
        violated(here, at);
    }
    let inner = m.lock_unpoisoned();
    HELD.with(|h| h.set(Some(here)));
    Guard { inner, outer }
}

/// A wake-up flag's lock (a condition variable's, taken for one assignment
/// or a wait): a leaf, outside the rule. Nothing else is taken while it is
/// held, and it may be taken under a daemon lock (`changed()` wakes the
/// scheduler from anywhere).
pub fn leaf<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock_unpoisoned()
}

/// A gate: a lock that lets one thread at a time through a whole job
/// (retention's sweep), under which daemon locks are then taken one at a
/// time. It is taken only while this thread holds no daemon lock (checked
/// as [`lock`] checks), so the one order there can be is gate, then lock.
#[track_caller]
pub fn gate<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    if let Some(at) = HELD.with(Cell::get) {
        violated(Location::caller(), at);
    }
    m.lock_unpoisoned()
}

/// Whether this thread holds a daemon lock now.
#[cfg(test)]
fn held() -> Option<&'static Location<'static>> {
    HELD.with(Cell::get)
}

fn violated(here: &Location<'_>, at: &Location<'_>) {
    let msg = format!(
        "daemon lock taken at {here} while this thread holds the one taken at {at}: the daemon's locks are never nested (daemon/locks.rs); release the first before taking the second"
    );
    if let Some(path) = std::env::var_os("NIGHTJAR_LOCK_AUDIT") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
        {
            let _ = writeln!(f, "{msg}");
        }
        return;
    }
    if cfg!(debug_assertions) {
        panic!("{msg}");
    }
    static TOLD: AtomicBool = AtomicBool::new(false);
    if !TOLD.swap(true, Ordering::Relaxed) {
        tracing::error!("{msg}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lock_at_a_time_is_fine_and_the_note_clears() {
        let (a, b) = (Mutex::new(1), Mutex::new(2));
        {
            let g = lock(&a);
            assert_eq!(*g, 1);
            assert!(held().is_some());
        }
        assert!(held().is_none());
        assert_eq!(*lock(&b), 2);
        assert!(held().is_none());
    }

    #[test]
    fn a_second_lock_while_one_is_held_names_both_places() {
        let (a, b) = (Mutex::new(1), Mutex::new(2));
        let r = std::thread::spawn(move || {
            let _g = lock(&a);
            let _h = lock(&b);
        })
        .join();
        let e = r.expect_err("nesting must panic in a debug build");
        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("never nested") && msg.contains("locks.rs"),
            "{msg}"
        );
    }
}
