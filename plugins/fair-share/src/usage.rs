//! Decayed usage per project, in GPU-hours, kept from one pass to the next.
//!
//! A run that ended at `end` weighs `hours x GPUs x 0.5^((now - end) / half_life)`.
//! Written as `0.5^((anchor - end) / half_life) x 0.5^((now - anchor) / half_life)`
//! with `anchor` the last multiple of the half-life at or before `now`, the
//! first factor no longer moves with `now`. That factor is split again
//! into whole half-lives `k` (an exact power of two) and the rest, in
//! (0.5, 1]: each ended run's GPU-hours x the rest is a fixed-point
//! integer, and each project's total of them per `k` is kept ([`Memo`]).
//! So a run keeps its relative precision however old it is (one scale for
//! all ages rounded the runs of a cluster idle for 40 half-lives to no
//! usage at all, and fair-share compares the projects' shares of it).
//!
//! A pass finds the last pass's runs again in its usage (the window moves:
//! a few runs leave at the front, a few join at the end), takes the
//! leavers' weights off and adds the newcomers', and multiplies each total
//! by its power of two and the second factor once. A week of runs was a
//! power and a float sum per run every pass: a fifth of a simulation's time.
//!
//! What is kept never changes an answer: a weight is the same integer
//! whether kept or made afresh, and integer totals do not depend on the
//! order of additions and removals, so the same snapshot gives the same
//! sums, bit for bit, whatever this instance saw before (the policy stays
//! pure). Times are subtracted as i128: none overflows, however far apart.

use std::cell::RefCell;
use std::collections::BTreeMap;

use nightjar_sdk::{Snapshot, Usage};

/// Distinct project names kept before the memo starts afresh.
const MAX_PROJECTS: usize = 4096;

/// How far ahead of the last match a run is looked for among the kept ones.
const LOOK_AHEAD: usize = 256;

/// Fixed-point units per GPU-hour of a kept weight (2^53: exact to about
/// 10^-16 GPU-hours, under 10^-9 of a run of 1 ms on one GPU; the largest,
/// 2^64 ms on 2^32 GPUs, still fits a u128).
const SCALE: f64 = (1u64 << 53) as f64;

/// Whole half-lives counted at most: 0.5^1100 is 0 as an f64, so runs
/// older than that all weigh 0 (in one total, kept like any other).
const MAX_HALVINGS: i64 = 1100;

/// One ended run as the last pass saw it.
#[derive(Clone, Copy)]
struct Row {
    started_at: i64,
    ended_at: i64,
    gpus: u32,
    /// Its project: an index into [`Memo::names`].
    slot: usize,
    /// Whole half-lives from its end to the anchor (-1 when it ended after
    /// the anchor; at most [`MAX_HALVINGS`]).
    halvings: i64,
    /// GPU-hours x the rest of the decay from its end to the anchor, in
    /// [`SCALE`] units.
    weight: u128,
}

/// An exact total of weights: 192 bits, wrapping, so additions and
/// removals cancel exactly in any order (2^64 of the largest weights fit).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Wide {
    lo: u128,
    hi: u64,
}

impl Wide {
    fn add(&mut self, w: u128) {
        let (lo, carry) = self.lo.overflowing_add(w);
        self.lo = lo;
        self.hi = self.hi.wrapping_add(u64::from(carry));
    }

    fn sub(&mut self, w: u128) {
        let (lo, borrow) = self.lo.overflowing_sub(w);
        self.lo = lo;
        self.hi = self.hi.wrapping_sub(u64::from(borrow));
    }

    fn is_zero(self) -> bool {
        self == Wide::default()
    }

    fn to_f64(self) -> f64 {
        self.hi as f64 * 2f64.powi(128) + self.lo as f64
    }
}

/// What one pass leaves for the next.
#[derive(Default)]
struct Memo {
    half_life: i64,
    anchor: i128,
    /// The last pass's ended runs, in its usage's order, from `front` on
    /// (those before it left the usage: dropped in a batch, not one by one).
    rows: Vec<Row>,
    front: usize,
    /// Per slot and whole half-lives, the total of its kept runs' weights.
    /// No total is 0 (one that comes to 0 is removed), so the map is the
    /// same whatever the order of the edits that made it.
    totals: BTreeMap<(usize, i64), Wide>,
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
    MEMO.with(|m| {
        // Taken out while in use: a pass that panics leaves a fresh memo
        // behind, never a half-edited one.
        let mut memo = m.take();
        let sums = memo.sums(half_life.max(1), s);
        m.replace(memo);
        sums
    })
}

/// Hours from `from` to `to`, 0 if `to` is not later (for any two times:
/// subtracted as i128).
fn hours(from: i64, to: i64) -> f64 {
    (i128::from(to) - i128::from(from)).max(0) as f64 / 3_600_000.0
}

/// The kept form of the ended run `u` of project `slot`, which ended at
/// `end` (at most `now`, so less than a half-life after `anchor`).
fn weigh(u: &Usage, end: i64, slot: usize, anchor: i128, half_life: i64) -> Row {
    let back = anchor - i128::from(end);
    let h = i128::from(half_life);
    let halvings = back.div_euclid(h).min(i128::from(MAX_HALVINGS)) as i64;
    let rest = 0.5f64.powf(back.rem_euclid(h) as f64 / half_life as f64);
    let weight = hours(u.started_at, end) * f64::from(u.gpus.max(1)) * rest;
    Row {
        started_at: u.started_at,
        ended_at: end,
        gpus: u.gpus,
        slot,
        halvings,
        weight: (weight * SCALE).round() as u128,
    }
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
        u: &Usage,
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

    /// The last pass's ended runs, in its usage's order.
    #[cfg(test)]
    pub(crate) fn live(&self) -> &[Row] {
        self.rows.get(self.front..).unwrap_or_default()
    }

    fn sums<'a>(&mut self, half_life: i64, s: &Snapshot<'a>) -> BTreeMap<&'a str, f64> {
        let into = s.now.rem_euclid(half_life);
        let anchor = i128::from(s.now) - i128::from(into);
        if (half_life, anchor) != (self.half_life, self.anchor) || self.names.len() > MAX_PROJECTS {
            *self = Memo {
                half_life,
                anchor,
                ..Memo::default()
            };
        }
        // The kept rows stay where they are: a pass's usage is mostly the
        // last one's with a few runs gone at the front and a few new at the
        // end, so the run of kept rows it finds in order is kept in place
        // (`front..held`) and only what follows is written anew (`tail`).
        let mut old = std::mem::take(&mut self.rows);
        let mut front = self.front.min(old.len());
        self.computed = 0;
        // Per slot: the name as this snapshot gives it, and what running
        // runs used (undecayed).
        let mut here: Vec<Option<(&'a str, f64)>> = Vec::new();
        let mut at = front;
        let mut seen = Seen::default();
        let mut tail: Option<Vec<Row>> = None;
        let mut held = front;
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
                match &mut tail {
                    None => held = at,
                    Some(t) => t.push(*r),
                }
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
                                self.edit(r, Wide::sub);
                            }
                            // Runs gone before any was kept: the kept
                            // ones start after them, still in place.
                            if tail.is_none() && held == front {
                                (front, held) = (at - 1, at);
                                continue;
                            }
                            row
                        }
                        None => {
                            self.computed += 1;
                            let row = weigh(u, end, slot, anchor, half_life);
                            self.edit(&row, Wide::add);
                            row
                        }
                    };
                    tail.get_or_insert_with(Vec::new).push(row);
                }
                // Running (or said to end later): used until now, undecayed.
                _ => entry.1 += hours(u.started_at, s.now) * gpus,
            }
        }
        for r in old.get(at..).unwrap_or_default() {
            self.edit(r, Wide::sub);
        }
        old.truncate(held);
        old.extend(tail.unwrap_or_default());
        // The dropped front goes once it is half of what is kept.
        if front > old.len() / 2 {
            old.drain(..front);
            front = 0;
        }
        (self.rows, self.front) = (old, front);
        let tail = 0.5f64.powf(into as f64 / half_life as f64);
        let totals = &self.totals;
        (here.into_iter().enumerate())
            .filter_map(|(slot, e)| {
                let (name, running) = e?;
                // By whole half-lives, the newest first.
                let kept = (totals.range((slot, i64::MIN)..=(slot, i64::MAX)))
                    .fold(0.0, |sum, (&(_, k), w)| {
                        sum + w.to_f64() / SCALE * 0.5f64.powi(k as i32)
                    });
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

    /// Adds `r`'s weight to its total or takes it off (`op`), removing a
    /// total that comes to 0.
    fn edit(&mut self, r: &Row, op: fn(&mut Wide, u128)) {
        let key = (r.slot, r.halvings);
        let total = self.totals.entry(key).or_default();
        op(total, r.weight);
        if total.is_zero() {
            self.totals.remove(&key);
        }
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "usage_history_tests.rs"]
mod history_tests;
