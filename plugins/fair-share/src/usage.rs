//! Decayed usage per project, in GPU-hours, kept from one pass to the next.
//!
//! A run that ended at `end` weighs `hours x GPUs x 0.5^((now - end) / half_life)`.
//! Written as `0.5^((anchor - end) / half_life) x 0.5^((now - anchor) / half_life)`
//! with `anchor` the last multiple of the half-life at or before `now`, the
//! first factor no longer moves with `now`. Each ended run's weight at the
//! anchor is a fixed-point integer, and each project's total of them is
//! kept ([`Memo`]): a pass finds the last pass's runs again in its usage
//! (the window moves: a few runs leave at the front, a few join at the
//! end), takes the leavers' weights off and adds the newcomers', and
//! multiplies each total by the second factor once. A week of runs was a
//! power and a float sum per run every pass: a fifth of a simulation's time.
//!
//! What is kept never changes an answer: a weight is the same integer
//! whether kept or made afresh, and integer totals do not depend on the
//! order of additions and removals, so the same snapshot gives the same
//! sums, bit for bit, whatever this instance saw before (the policy stays
//! pure).

use std::cell::RefCell;
use std::collections::BTreeMap;

use nightjar_sdk::Snapshot;

/// Distinct project names kept before the memo starts afresh.
const MAX_PROJECTS: usize = 4096;

/// How far ahead of the last match a run is looked for among the kept ones.
const LOOK_AHEAD: usize = 256;

/// Fixed-point units per GPU-hour of a kept weight (2^40: a run's weight
/// is exact to about 10^-12 GPU-hours).
const SCALE: f64 = (1u64 << 40) as f64;

/// One ended run as the last pass saw it.
#[derive(Clone, Copy)]
struct Row {
    started_at: i64,
    ended_at: i64,
    gpus: u32,
    /// Its project: an index into [`Memo::names`].
    slot: usize,
    /// GPU-hours x the decay from its end to the anchor, in [`SCALE`] units.
    weight: i128,
}

/// What one pass leaves for the next.
#[derive(Default)]
struct Memo {
    half_life: i64,
    anchor: i64,
    /// The last pass's ended runs, in its usage's order.
    rows: Vec<Row>,
    /// Per slot, the sum of its kept runs' weights (wrapping: additions and
    /// removals cancel exactly whatever the order).
    totals: Vec<i128>,
    /// Project names by slot.
    names: Vec<String>,
    slots: BTreeMap<String, usize>,
    /// Weights the last pass computed (not found kept).
    computed: usize,
}

/// The slots of the project names one snapshot hands out. The SDK gives
/// one `&str` per distinct string of a snapshot, so a name is looked for
/// by its address first (the same address within one snapshot is the same
/// text; across snapshots it may not be, so nothing here outlives a pass).
#[derive(Default)]
struct Seen<'a> {
    recent: Vec<(&'a str, usize)>,
    by_address: std::collections::HashMap<(usize, usize), usize>,
}

impl<'a> Seen<'a> {
    /// Distinct names compared by address one by one before a map.
    const SCAN: usize = 8;

    fn slot(&mut self, memo: &mut Memo, name: &'a str) -> usize {
        let same = |q: &&str| std::ptr::eq(q.as_ptr(), name.as_ptr()) && q.len() == name.len();
        for (q, k) in &self.recent {
            if same(q) {
                return *k;
            }
        }
        let address = (name.as_ptr() as usize, name.len());
        if let Some(&k) = self.by_address.get(&address) {
            return k;
        }
        let k = memo.slot(name);
        if self.recent.len() < Self::SCAN {
            self.recent.push((name, k));
        } else {
            self.by_address.insert(address, k);
        }
        k
    }
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::default();
}

/// Decayed usage per project at `s.now`, in GPU-hours (`half_life` in ms,
/// above 0: the config check refuses anything else).
pub(crate) fn usage<'a>(half_life: i64, s: &Snapshot<'a>) -> BTreeMap<&'a str, f64> {
    MEMO.with(|m| m.borrow_mut().sums(half_life.max(1), s))
}

fn hours(from: i64, to: i64) -> f64 {
    (to - from).max(0) as f64 / 3_600_000.0
}

impl Memo {
    /// The slot of `project`, named once.
    fn slot(&mut self, project: &str) -> usize {
        if let Some(&k) = self.slots.get(project) {
            return k;
        }
        self.names.push(project.to_string());
        self.slots.insert(project.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    /// The kept row for the ended run `u` of project `slot`, if the last
    /// pass had it, looked for from `at` on (moved past it when found), with
    /// the kept runs it passed over: those left the usage.
    fn find<'o>(
        old: &'o [Row],
        at: &mut usize,
        u: &nightjar_sdk::Usage,
        end: i64,
        slot: usize,
    ) -> Option<(Row, &'o [Row])> {
        let same = |r: &Row| {
            r.ended_at == end && r.started_at == u.started_at && r.gpus == u.gpus && r.slot == slot
        };
        let from = *at;
        let ahead = old.get(from..)?;
        let k = match ahead.first() {
            // Mostly the next one.
            Some(r) if same(r) => 0,
            _ => ahead.iter().take(LOOK_AHEAD).position(same)?,
        };
        *at = from + k + 1;
        Some((*ahead.get(k)?, ahead.get(..k)?))
    }

    fn sums<'a>(&mut self, half_life: i64, s: &Snapshot<'a>) -> BTreeMap<&'a str, f64> {
        let anchor = s.now - s.now.rem_euclid(half_life);
        if (half_life, anchor) != (self.half_life, self.anchor) || self.names.len() > MAX_PROJECTS {
            *self = Memo {
                half_life,
                anchor,
                ..Memo::default()
            };
        }
        let h = half_life as f64;
        let old = std::mem::take(&mut self.rows);
        self.computed = 0;
        let mut rows = Vec::with_capacity(s.usage.len());
        // Per slot: the name as this snapshot gives it, and what running
        // runs used (undecayed).
        let mut here: Vec<Option<(&'a str, f64)>> = Vec::new();
        let mut at = 0;
        let mut seen = Seen::default();
        for u in &s.usage {
            // Mostly the kept run next in line, its project told by the
            // address this pass gave the slot's name: branches that the
            // processor guesses right (a lookup of each run's project
            // guessed wrong whenever projects alternate).
            if let (Some(r), Some(end)) = (old.get(at), u.ended_at)
                && r.ended_at == end
                && end <= s.now
                && r.started_at == u.started_at
                && r.gpus == u.gpus
                && self.named(&mut here, r.slot, u.project)
            {
                at += 1;
                rows.push(*r);
                continue;
            }
            let gpus = u.gpus.max(1) as f64;
            let slot = seen.slot(self, u.project);
            if here.len() <= slot {
                here.resize(slot + 1, None);
            }
            let Some(entry) = here.get_mut(slot) else {
                continue;
            };
            let entry = entry.get_or_insert((u.project, 0.0));
            match u.ended_at {
                Some(end) if end <= s.now => {
                    let row = match Memo::find(&old, &mut at, u, end, slot) {
                        Some((row, gone)) => {
                            for r in gone {
                                self.add(r.slot, r.weight.wrapping_neg());
                            }
                            row
                        }
                        None => {
                            self.computed += 1;
                            let weight = hours(u.started_at, end)
                                * gpus
                                * 0.5f64.powf((anchor - end) as f64 / h);
                            let row = Row {
                                started_at: u.started_at,
                                ended_at: end,
                                gpus: u.gpus,
                                slot,
                                weight: (weight * SCALE).round() as i128,
                            };
                            self.add(slot, row.weight);
                            row
                        }
                    };
                    rows.push(row);
                }
                // Running (or said to end later): used until now, undecayed.
                _ => entry.1 += hours(u.started_at, s.now) * gpus,
            }
        }
        for r in old.get(at..).unwrap_or_default() {
            self.add(r.slot, r.weight.wrapping_neg());
        }
        self.rows = rows;
        let tail = 0.5f64.powf((s.now - anchor) as f64 / h);
        let totals = &self.totals;
        (here.into_iter().enumerate())
            .filter_map(|(slot, e)| {
                let (name, running) = e?;
                let kept = totals.get(slot).copied().unwrap_or(0) as f64 / SCALE;
                Some((name, kept * tail + running))
            })
            .collect()
    }

    /// Whether `name` is `slot`'s project, noting it in `here` (this pass's
    /// name per slot) the first time.
    fn named<'a>(
        &self,
        here: &mut Vec<Option<(&'a str, f64)>>,
        slot: usize,
        name: &'a str,
    ) -> bool {
        if let Some(Some((p, _))) = here.get(slot) {
            return std::ptr::eq(p.as_ptr(), name.as_ptr()) && p.len() == name.len() || *p == name;
        }
        if self.names.get(slot).is_none_or(|n| n != name) {
            return false;
        }
        if here.len() <= slot {
            here.resize(slot + 1, None);
        }
        if let Some(e) = here.get_mut(slot) {
            *e = Some((name, 0.0));
        }
        true
    }

    /// Adds `weight` to `slot`'s total.
    fn add(&mut self, slot: usize, weight: i128) {
        if self.totals.len() <= slot {
            self.totals.resize(slot + 1, 0);
        }
        if let Some(t) = self.totals.get_mut(slot) {
            *t = t.wrapping_add(weight);
        }
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
