//! A poisoned mutex, recovered in one place. A thread that panicked while
//! holding one of the host's mutexes leaves what it guards as whole as
//! between any two statements (no holder leaves it half-changed across a
//! call that can panic), so the next holder takes it as it is rather than
//! panicking in turn. A leaf: every module may use it.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// [`Mutex::lock`] that takes a poisoned mutex's data as it is.
pub trait LockUnpoisoned<T> {
    /// The guard, poisoned or not.
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T>;
}

impl<T> LockUnpoisoned<T> for Mutex<T> {
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutex_poisoned_by_a_panicking_holder_is_taken_as_it_was_left() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let held = std::sync::Arc::clone(&m);
        let _ = std::thread::spawn(move || {
            let mut g = held.lock().unwrap();
            *g = 2;
            panic!("the holder fails");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*m.lock_unpoisoned(), 2);
    }
}
