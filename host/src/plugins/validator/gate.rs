//! Who may compile a validator now. Compiles are costly (seconds, up to
//! `[plugins] compile_memory` each), so at most [`AT_ONCE`] run at once in
//! all, and each owner's one at a time: one user naming many big
//! validators waits behind her own compiles and leaves the other slot to
//! everyone else, instead of holding every other user's judging behind a
//! single lock.

use crate::sync::LockUnpoisoned;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Compiles running at once, across owners.
pub const AT_ONCE: usize = 2;

/// The compile slots and each owner's turn.
#[derive(Default)]
pub struct Gate {
    owners: Mutex<HashMap<Option<u32>, Arc<Mutex<()>>>>,
    running: Mutex<usize>,
    freed: Condvar,
}

/// A compile's right to run: its owner's turn and one slot, until dropped.
pub struct Pass<'a> {
    gate: &'a Gate,
    _turn: MutexGuard<'a, ()>,
}

impl Gate {
    /// Waits for the owner's `turn` ([`Gate::turn_of`]), then for a slot.
    pub fn enter<'a>(&'a self, turn: &'a Mutex<()>) -> Pass<'a> {
        let guard = turn.lock_unpoisoned();
        let mut running = self.running.lock_unpoisoned();
        while *running >= AT_ONCE {
            running = self.freed.wait(running).unwrap_or_else(|p| p.into_inner());
        }
        *running += 1;
        Pass {
            gate: self,
            _turn: guard,
        }
    }

    /// `owner`'s turn (made on first use).
    pub fn turn_of(&self, owner: Option<u32>) -> Arc<Mutex<()>> {
        let mut owners = self.owners.lock_unpoisoned();
        if owners.len() > 4096 {
            // Unused turns go; a held one stays referenced by its holder.
            owners.retain(|_, t| Arc::strong_count(t) > 1);
        }
        Arc::clone(owners.entry(owner).or_default())
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut running = self.gate.running.lock_unpoisoned();
        *running = running.saturating_sub(1);
        self.gate.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn one_owner_compiles_one_at_a_time_and_leaves_a_slot_to_others() {
        let gate = Arc::new(Gate::default());
        let busy = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        // Her compiles last until bob is through (not 100 ms each, which a
        // loaded machine could let all four finish before bob's turn), or
        // 10 s if he is made to wait for them.
        let bob_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let alice: Vec<_> = (0..4)
            .map(|_| {
                let (g, busy, peak, started, bob_done) = (
                    Arc::clone(&gate),
                    Arc::clone(&busy),
                    Arc::clone(&peak),
                    Arc::clone(&started),
                    Arc::clone(&bob_done),
                );
                std::thread::spawn(move || {
                    let turn = g.turn_of(Some(1001));
                    let _p = g.enter(&turn);
                    started.fetch_add(1, Ordering::SeqCst);
                    let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    let until = std::time::Instant::now() + Duration::from_secs(10);
                    while !bob_done.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    // Long enough that two of hers at once would be seen.
                    std::thread::sleep(Duration::from_millis(100));
                    busy.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        while started.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        // Bob gets the other slot while her queue is long, not after it.
        let turn = gate.turn_of(Some(1002));
        drop(gate.enter(&turn));
        let hers_before_bob = started.load(Ordering::SeqCst);
        bob_done.store(true, Ordering::SeqCst);
        for a in alice {
            a.join().unwrap();
        }
        assert_eq!(
            peak.load(Ordering::SeqCst),
            1,
            "her compiles ran one at a time"
        );
        assert!(hers_before_bob < 4, "bob waited for all four of hers");
    }
}
