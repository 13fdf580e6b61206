//! Plugin calls abandoned by their callers (stuck in a host call that no
//! deadline reaches), counted per plugin kind and per task owner. Each
//! holds a thread and a store until it comes back, so the count is capped;
//! the cap is per owner within a kind, so one user's stuck validations
//! never refuse another user's, and stuck validators never refuse a
//! notifier or a policy load.

use crate::sync::LockUnpoisoned;
use std::collections::HashMap;
use std::sync::Mutex;

/// The kind of plugin a call is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Scheduling policies (their loads and passes).
    Policy,
    /// Notifiers (loads, checks, deliveries).
    Notifier,
    /// Result validators (compiles, configures, validations).
    Validator,
}

/// Whose budget a call is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Budget {
    /// The plugin's kind.
    pub kind: Kind,
    /// The uid of the task owner the call works for (none: the daemon's).
    pub owner: Option<u32>,
}

/// Abandoned calls one owner may have of one kind before their next is refused.
pub const PER_OWNER: usize = 16;

/// Abandoned calls of one kind, all owners together (a bound on threads).
pub const PER_KIND: usize = 256;

static COUNTS: Mutex<Option<HashMap<Budget, usize>>> = Mutex::new(None);

fn counts() -> std::sync::MutexGuard<'static, Option<HashMap<Budget, usize>>> {
    COUNTS.lock_unpoisoned()
}

impl Budget {
    /// The daemon's own calls of `kind`.
    pub fn daemon(kind: Kind) -> Budget {
        Budget { kind, owner: None }
    }

    /// Calls of `kind` for the task owner `uid`.
    pub fn owner(kind: Kind, uid: Option<u32>) -> Budget {
        Budget { kind, owner: uid }
    }

    /// Whether a new call may start under this budget.
    pub fn room(&self) -> bool {
        let c = counts();
        let Some(map) = c.as_ref() else { return true };
        let mine = map.get(self).copied().unwrap_or(0);
        let kind: usize = map
            .iter()
            .filter(|(b, _)| b.kind == self.kind)
            .map(|(_, n)| n)
            .sum();
        mine < PER_OWNER && kind < PER_KIND
    }

    /// One more call abandoned.
    pub(super) fn add(&self) {
        *counts()
            .get_or_insert_with(HashMap::new)
            .entry(*self)
            .or_insert(0) += 1;
    }

    /// An abandoned call came back.
    pub(super) fn sub(&self) {
        let mut c = counts();
        if let Some(map) = c.as_mut()
            && let Some(n) = map.get_mut(self)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(self);
            }
        }
    }

    /// Abandoned calls now counted in this budget.
    pub fn abandoned(&self) -> usize {
        counts()
            .as_ref()
            .and_then(|m| m.get(self).copied())
            .unwrap_or(0)
    }
}

/// Abandoned plugin calls still alive, every kind and owner.
pub fn abandoned_threads() -> usize {
    counts().as_ref().map_or(0, |m| m.values().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_owners_stuck_validations_leave_room_for_others_and_other_kinds() {
        // Uids no other test uses (the counts are the process's).
        let alice = Budget::owner(Kind::Validator, Some(4_000_001));
        let bob = Budget::owner(Kind::Validator, Some(4_000_002));
        for _ in 0..PER_OWNER {
            assert!(alice.room());
            alice.add();
        }
        assert!(!alice.room(), "her next is refused");
        assert!(bob.room(), "his is not");
        assert!(Budget::daemon(Kind::Notifier).room());
        assert!(Budget::daemon(Kind::Policy).room());
        alice.sub();
        assert!(alice.room(), "one came back: room again");
        for _ in 1..PER_OWNER {
            alice.sub();
        }
        assert_eq!(alice.abandoned(), 0);
    }
}
