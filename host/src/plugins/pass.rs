//! One scheduling pass as the plugins see it: the host's snapshot, and what
//! is derived from it once per pass however many plugins are called (the
//! random seed, the ids answers are checked against, the 0.1 and 0.2
//! forms, the incremental change from each snapshot plugins hold), each made
//! the first time a plugin needs it.

use std::sync::{Arc, Mutex, OnceLock};

use super::incremental::{self, Change, Held, Kind};
use super::policy::{Snapshot, seed_of};
use super::validate::Ids;
use super::wasi::SeedSource;
use super::{v0_1, v0_2};

/// A change made for a pass, or why none could be.
type Made = Result<Arc<Change>, String>;

/// A snapshot shared by every plugin of a pass.
pub struct Pass {
    snapshot: Arc<Snapshot>,
    seed: Arc<OnceLock<u64>>,
    ids: OnceLock<Ids>,
    v0_1: OnceLock<v0_1::exports::nightjar::plugin::policy::Snapshot>,
    v0_2: OnceLock<Result<v0_2::types::Snapshot, String>>,
    /// The changes made so far, by the generation they start from (0: from
    /// nothing) and their form: every plugin of a chain usually holds the
    /// same one.
    changes: Mutex<Vec<((u64, Kind), Made)>>,
    tariff: Option<Arc<crate::tariff::Tariff>>,
}

impl Pass {
    /// A pass over `snapshot`.
    pub fn new(snapshot: Arc<Snapshot>) -> Pass {
        Pass {
            snapshot,
            seed: Arc::new(OnceLock::new()),
            ids: OnceLock::new(),
            v0_1: OnceLock::new(),
            v0_2: OnceLock::new(),
            changes: Mutex::new(Vec::new()),
            tariff: None,
        }
    }

    /// This pass with the daemon's tariff, which 0.2 policies read through
    /// their `tariff` import.
    pub fn with_tariff(mut self, tariff: Option<Arc<crate::tariff::Tariff>>) -> Pass {
        self.tariff = tariff;
        self
    }

    /// The daemon's tariff, if the pass has one.
    pub fn tariff(&self) -> Option<Arc<crate::tariff::Tariff>> {
        self.tariff.clone()
    }

    /// The host's snapshot.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The seed every plugin's randomness restarts from in this pass.
    pub fn seed(&self) -> u64 {
        *self.seed.get_or_init(|| seed_of(&self.snapshot))
    }

    /// [`Pass::seed`], made when a plugin first draws randomness (most
    /// never do) and then shared by every plugin of the pass.
    pub fn seed_source(&self) -> SeedSource {
        // The snapshot is not kept alive by it: a source outlives its pass
        // (until the next pass's replaces it), and is only run within it.
        let (snapshot, seed) = (Arc::downgrade(&self.snapshot), Arc::clone(&self.seed));
        Box::new(move || *seed.get_or_init(|| snapshot.upgrade().map_or(0, |s| seed_of(&s))))
    }

    /// The ids and GPUs answers are checked against.
    pub fn ids(&self) -> &Ids {
        self.ids.get_or_init(|| Ids::of(&self.snapshot))
    }

    /// The snapshot as 0.1's records.
    pub fn v0_1(&self) -> &v0_1::exports::nightjar::plugin::policy::Snapshot {
        self.v0_1.get_or_init(|| v0_1::snapshot(&self.snapshot))
    }

    /// The snapshot in 0.2's compact form, or why it cannot be written.
    pub fn v0_2(&self) -> Result<&v0_2::types::Snapshot, &str> {
        self.v0_2
            .get_or_init(|| v0_2::wire(&self.snapshot))
            .as_ref()
            .map_err(String::as_str)
    }

    /// The change to this pass's snapshot from `held` in the form of
    /// `kind`, made once per pass for every plugin holding the same one.
    pub fn change(&self, held: Option<&Arc<Held>>, kind: Kind) -> Result<Arc<Change>, String> {
        // A held snapshot of the other form is no base for this one.
        let held = held.filter(|h| h.kind() == kind);
        let base = (held.map_or(0, |h| h.generation), kind);
        let mut changes = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, c)) = changes.iter().find(|(b, _)| *b == base) {
            return c.clone();
        }
        let c = incremental::feed::change(held.map(|h| &**h), &self.snapshot, kind).map(Arc::new);
        changes.push((base, c.clone()));
        c
    }

    /// Tasks and GPUs in the snapshot: what bounds the size of an answer.
    pub fn items(&self) -> usize {
        let s = &self.snapshot;
        s.queue.len() + s.running.len() + s.gpus.len()
    }
}

impl From<Snapshot> for Pass {
    fn from(s: Snapshot) -> Pass {
        Pass::new(Arc::new(s))
    }
}
