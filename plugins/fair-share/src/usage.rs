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
//! A pass applies the usage's edit since the last pass, as the SDK names
//! it ([`nightjar_sdk::usage_edit`]): the runs that left take their weights
//! off, the new ones are weighed and added, and the few open ones (running,
//! or said to end later) are looked at again. So a pass costs what changed,
//! not the week of runs: walking every run to find the kept ones again was
//! most of a simulation's fair-share time. Without an edit from the list
//! the memo holds (the first pass, a snapshot sent whole, a clock that went
//! back, another anchor) every run is weighed afresh.
//!
//! What is kept never changes an answer: a weight is the same integer
//! whether kept or made afresh, integer totals do not depend on the order
//! of additions and removals, and the open runs are summed in the usage's
//! order either way, so the same snapshot gives the same sums, bit for bit,
//! whatever this instance saw before (the policy stays pure). Times are
//! subtracted as i128: none overflows, however far apart.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};

use nightjar_sdk::Snapshot;
use nightjar_sdk::usage_edit::UsageEdit;

/// Distinct project names kept before the memo starts afresh.
const MAX_PROJECTS: usize = 4096;

/// Fixed-point units per GPU-hour of a kept weight (2^53: exact to about
/// 10^-16 GPU-hours, under 10^-9 of a run of 1 ms on one GPU; the largest,
/// 2^64 ms on 2^32 GPUs, still fits a u128).
const SCALE: f64 = (1u64 << 53) as f64;

/// Whole half-lives counted at most: 0.5^1100 is 0 as an f64, so runs
/// older than that all weigh 0 (in one total, kept like any other).
const MAX_HALVINGS: i64 = 1100;

/// One run of the usage list the memo holds, at its place in that list.
#[derive(Clone, Copy, Debug)]
struct Row {
    started_at: i64,
    ended_at: Option<i64>,
    gpus: u32,
    /// Its project: an index into [`Memo::names`].
    slot: usize,
    /// Whether its weight is in the totals (it ended by the pass's `now`);
    /// else it is open: used until `now`, undecayed, summed each pass.
    closed: bool,
    /// Whole half-lives from its end to the anchor (-1 when it ended after
    /// the anchor; at most [`MAX_HALVINGS`]). Set once closed.
    halvings: i64,
    /// GPU-hours x the rest of the decay from its end to the anchor, in
    /// [`SCALE`] units. Set once closed.
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
    /// The SDK's token of the usage list `rows` mirrors (0: the empty list,
    /// or a list no edit will name).
    token: u64,
    /// The last pass's clock: a pass before it starts afresh (a run it
    /// saw closed might be open again).
    now: i64,
    /// The last pass's usage, run for run, in its order.
    rows: VecDeque<Row>,
    /// The positions in `rows` of the open runs, ascending.
    open: Vec<usize>,
    /// Per slot and whole half-lives, the total of its closed runs'
    /// weights. No total is 0 (one that comes to 0 is removed), so the map
    /// is the same whatever the order of the edits that made it.
    totals: BTreeMap<(usize, i64), Wide>,
    /// Project names by slot, and how many runs of `rows` each has.
    names: Vec<String>,
    count: Vec<usize>,
    slots: BTreeMap<String, usize>,
    /// Runs this pass weighed (newly closed ones; every closed one when it
    /// started afresh).
    computed: usize,
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::default();
}

/// Decayed usage per project at `s.now`, in GPU-hours (`half_life` in ms,
/// above 0: the config check refuses anything else); `edit` is how `s`'s
/// usage came from the last pass's, when the SDK says.
pub(crate) fn usage(
    half_life: i64,
    s: &Snapshot,
    edit: Option<&UsageEdit>,
) -> BTreeMap<String, f64> {
    MEMO.with(|m| {
        // Taken out while in use: a pass that panics leaves a fresh memo
        // behind, never a half-edited one.
        let mut memo = m.take();
        let sums = memo.sums(half_life.max(1), s, edit);
        m.replace(memo);
        sums
    })
}

/// Hours from `from` to `to`, 0 if `to` is not later (for any two times:
/// subtracted as i128).
fn hours(from: i64, to: i64) -> f64 {
    (i128::from(to) - i128::from(from)).max(0) as f64 / 3_600_000.0
}

/// Whole half-lives from `end` (at most `now`, so less than a half-life
/// after `anchor`) back to the anchor, and the run's GPU-hours x the rest
/// of the decay, in [`SCALE`] units.
fn weigh(started_at: i64, end: i64, gpus: u32, anchor: i128, half_life: i64) -> (i64, u128) {
    let back = anchor - i128::from(end);
    let h = i128::from(half_life);
    let halvings = back.div_euclid(h).min(i128::from(MAX_HALVINGS)) as i64;
    let rest = 0.5f64.powf(back.rem_euclid(h) as f64 / half_life as f64);
    let weight = hours(started_at, end) * f64::from(gpus.max(1)) * rest;
    (halvings, (weight * SCALE).round() as u128)
}

/// Where the kept items at ascending positions `open` of a list land once
/// the list is edited (`removed` from it, new items placed at `added_at`):
/// kept items fill the places no new item takes, in order; removed ones
/// are dropped.
fn moved(open: &[usize], removed: &[u32], added_at: &[u32]) -> Vec<usize> {
    let mut out = Vec::with_capacity(open.len());
    let (mut r, mut a) = (0, 0);
    for &p in open {
        while removed.get(r).is_some_and(|&x| (x as usize) < p) {
            r += 1;
        }
        if removed.get(r).is_some_and(|&x| x as usize == p) {
            continue;
        }
        let rank = p - r;
        while added_at.get(a).is_some_and(|&x| (x as usize) <= rank + a) {
            a += 1;
        }
        out.push(rank + a);
    }
    out
}

impl Memo {
    /// The slot of `project`, named once.
    fn slot(&mut self, project: &str) -> usize {
        if let Some(&k) = self.slots.get(project) {
            return k;
        }
        self.names.push(project.to_string());
        self.count.push(0);
        self.slots.insert(project.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    /// The row of run `u`, counted in its slot; open (nothing added yet).
    fn admit(&mut self, u: &nightjar_sdk::Usage) -> Row {
        let slot = self.slot(u.project);
        if let Some(c) = self.count.get_mut(slot) {
            *c += 1;
        }
        Row {
            started_at: u.started_at,
            ended_at: u.ended_at,
            gpus: u.gpus,
            slot,
            closed: false,
            halvings: 0,
            weight: 0,
        }
    }

    fn sums(
        &mut self,
        half_life: i64,
        s: &Snapshot,
        edit: Option<&UsageEdit>,
    ) -> BTreeMap<String, f64> {
        let into = s.now.rem_euclid(half_life);
        let anchor = i128::from(s.now) - i128::from(into);
        self.computed = 0;
        // A fresh memo holds the empty list, token 0: an edit from nothing
        // (a snapshot that came whole) applies to it like any other. Token
        // 0 over kept runs (a pass without an edit) names no list: an edit
        // from nothing must not be read as an edit of those runs.
        let kept = (half_life, anchor) == (self.half_life, self.anchor)
            && self.names.len() <= MAX_PROJECTS
            && s.now >= self.now
            && edit.is_some_and(|e| {
                e.from == self.token
                    && (e.from != 0 || self.rows.is_empty())
                    && self.fits(e, s.usage.len())
            });
        match edit.filter(|_| kept) {
            Some(e) => self.apply(e, s),
            // Without one, every run is weighed afresh.
            None => {
                *self = Memo {
                    half_life,
                    anchor,
                    ..Memo::default()
                };
                let rows: VecDeque<Row> = s.usage.iter().map(|u| self.admit(u)).collect();
                self.open = (0..rows.len()).collect();
                self.rows = rows;
            }
        }
        self.token = edit.map_or(0, |e| e.to);
        self.now = s.now;
        #[cfg(debug_assertions)]
        self.check_mirrors(s);
        // The open runs: those that ended by now close (weighed once); the
        // rest count as used until now, undecayed, in the usage's order.
        let mut running = vec![0.0; self.names.len()];
        let open = std::mem::take(&mut self.open);
        let mut still = Vec::with_capacity(open.len());
        for p in open {
            let Some(row) = self.rows.get_mut(p) else {
                continue;
            };
            match row.ended_at {
                Some(end) if end <= s.now => {
                    (row.halvings, row.weight) =
                        weigh(row.started_at, end, row.gpus, anchor, half_life);
                    row.closed = true;
                    let row = *row;
                    self.computed += 1;
                    self.edit(&row, Wide::add);
                }
                _ => {
                    if let Some(r) = running.get_mut(row.slot) {
                        *r += hours(row.started_at, s.now) * f64::from(row.gpus.max(1));
                    }
                    still.push(p);
                }
            }
        }
        self.open = still;
        let tail = 0.5f64.powf(into as f64 / half_life as f64);
        let totals = &self.totals;
        (self.names.iter().zip(&self.count).zip(running).enumerate())
            .filter(|(_, ((_, count), _))| **count > 0)
            .map(|(slot, ((name, _), running))| {
                // By whole half-lives, the newest first.
                let kept = (totals.range((slot, i64::MIN)..=(slot, i64::MAX)))
                    .fold(0.0, |sum, (&(_, k), w)| {
                        sum + w.to_f64() / SCALE * 0.5f64.powi(k as i32)
                    });
                (name.clone(), kept * tail + running)
            })
            .collect()
    }

    /// Whether `e` edits the list the memo holds into one of `len` runs:
    /// positions ascending and in range (checked before anything moves).
    fn fits(&self, e: &UsageEdit, len: usize) -> bool {
        let increasing = |l: &[u32]| l.windows(2).all(|w| w[0] < w[1]);
        let old = self.rows.len();
        increasing(&e.removed)
            && increasing(&e.added_at)
            && e.removed.last().is_none_or(|&r| (r as usize) < old)
            && old - e.removed.len() + e.added_at.len() == len
            && e.added_at.last().is_none_or(|&a| (a as usize) < len)
    }

    /// Applies `e` (it [`fits`](Memo::fits)): the runs that left take their
    /// weights off, the new ones join open.
    fn apply(&mut self, e: &UsageEdit, s: &Snapshot) {
        for &r in e.removed.iter().rev() {
            let Some(row) = self.rows.remove(r as usize) else {
                continue;
            };
            if row.closed {
                self.edit(&row, Wide::sub);
            }
            if let Some(c) = self.count.get_mut(row.slot) {
                *c -= 1;
            }
        }
        let mut open = moved(&self.open, &e.removed, &e.added_at);
        for &a in &e.added_at {
            let Some(u) = s.usage.get(a as usize) else {
                continue;
            };
            let row = self.admit(u);
            self.rows.insert(a as usize, row);
        }
        open.extend(e.added_at.iter().map(|&a| a as usize));
        open.sort_unstable();
        self.open = open;
    }

    /// Every row is the run at its place in `s` (tests and debug builds).
    #[cfg(debug_assertions)]
    fn check_mirrors(&self, s: &Snapshot) {
        assert_eq!(self.rows.len(), s.usage.len(), "the memo mirrors the usage");
        for (k, (r, u)) in self.rows.iter().zip(&s.usage).enumerate() {
            let name = self.names.get(r.slot).map(String::as_str);
            assert!(
                (r.started_at, r.ended_at, r.gpus, name)
                    == (u.started_at, u.ended_at, u.gpus, Some(u.project)),
                "run {k}: kept {r:?} for {u:?}"
            );
        }
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

#[cfg(test)]
#[path = "usage_edit_tests.rs"]
mod edit_tests;
