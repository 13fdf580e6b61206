//! How one list became another, as the `edit` of the incremental contract:
//! the positions that left the old list and the positions the newcomers
//! take in the new one. Any edit these functions return rebuilds `new` from
//! `old` exactly; they differ in how small it is for the way each list
//! changes between passes.

use std::cmp::Ordering;

/// Positions removed from the old list (ascending) and positions of the new
/// list that hold added items (ascending).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edit {
    /// Positions in the old list.
    pub removed: Vec<u32>,
    /// Positions in the new list.
    pub added_at: Vec<u32>,
}

impl Edit {
    /// Whether the lists are the same.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added_at.is_empty()
    }

    /// The edit that drops all of `old` and adds all of `new`.
    pub fn replace_all(old: usize, new: usize) -> Edit {
        Edit {
            removed: (0..old).map(pos).collect(),
            added_at: (0..new).map(pos).collect(),
        }
    }
}

/// A position as the contract writes it. Lists past `u32::MAX` items never
/// reach here: the snapshot's text would pass its table's limit first.
fn pos(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// Whether `l` is in strictly increasing order of `key`.
pub fn sorted<T, K: Ord>(l: &[T], key: impl Fn(&T) -> K) -> bool {
    l.windows(2).all(|w| key(&w[0]) < key(&w[1]))
}

/// The edit for two lists each in strictly increasing order of `key` (the
/// host's queue order, whose key ends with the task id), and whether `new`
/// is in that order. `old_sorted` says whether `old` is (the caller checked
/// it when `old` was new). Items equal in both (`==` implies equal keys)
/// are kept; an item whose key is in both but which changed is removed and
/// added again. Lists out of order get [`Edit::replace_all`], which is
/// always right.
///
/// The common pass changes little: the equal items at the front are
/// skipped without computing a key, their order known from `old`'s.
pub fn by_key<T: PartialEq, K: Ord>(
    old: &[T],
    old_sorted: bool,
    new: &[T],
    key: impl Fn(&T) -> K,
) -> (Edit, bool) {
    let whole = |key: &dyn Fn(&T) -> K| {
        let new_sorted = sorted(new, key);
        (Edit::replace_all(old.len(), new.len()), new_sorted)
    };
    if !old_sorted {
        return whole(&key);
    }
    let front = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let mut edit = Edit::default();
    let (mut i, mut j) = (front, front);
    // The last key taken from each list: each must be above it.
    let start = front.checked_sub(1).map(|p| key(&old[p]));
    let (mut last_old, mut last_new) = (start, None::<K>);
    if let Some(k) = &last_old {
        last_new = Some(key(&new[front - 1]));
        debug_assert!(last_new.as_ref() == Some(k));
    }
    while i < old.len() && j < new.len() {
        let (a, b) = (key(&old[i]), key(&new[j]));
        if last_old.as_ref().is_some_and(|l| *l >= a) || last_new.as_ref().is_some_and(|l| *l >= b)
        {
            return whole(&key);
        }
        match a.cmp(&b) {
            Ordering::Less => {
                edit.removed.push(pos(i));
                i += 1;
                last_old = Some(a);
            }
            Ordering::Greater => {
                edit.added_at.push(pos(j));
                j += 1;
                last_new = Some(b);
            }
            Ordering::Equal => {
                let same = old[i] == new[j];
                if !same {
                    edit.removed.push(pos(i));
                    edit.added_at.push(pos(j));
                }
                i += 1;
                j += 1;
                last_old = Some(a);
                last_new = Some(b);
                if same {
                    // The rows both lists hold next, pair by pair, are in
                    // order (the old list is), so they are passed by
                    // equality alone: no key is made for them.
                    let run = (old[i..].iter().zip(&new[j..]))
                        .take_while(|(a, b)| a == b)
                        .count();
                    if run > 0 {
                        i += run;
                        j += run;
                        last_old = Some(key(&old[i - 1]));
                        last_new = Some(key(&new[j - 1]));
                    }
                }
            }
        }
    }
    let sorted_from = |l: &[T], from: usize, last: Option<K>| {
        let mut last = last;
        l[from..].iter().all(|t| {
            let k = key(t);
            let ok = last.as_ref().is_none_or(|l| *l < k);
            last = Some(k);
            ok
        })
    };
    if !sorted_from(old, i, last_old) || !sorted_from(new, j, last_new) {
        return whole(&key);
    }
    edit.removed.extend((i..old.len()).map(pos));
    edit.added_at.extend((j..new.len()).map(pos));
    (edit, true)
}

/// The edit for a list that moves like a window (the usage: runs in the
/// order they were recorded, the oldest leaving at the front, new ones
/// arriving at the back, a run's end changing its record in place): the old
/// items before the first one equal to `new`'s first leave, then the two
/// are walked side by side, an unequal pair being one removal and one
/// addition.
pub fn aligned<T: PartialEq>(old: &[T], new: &[T]) -> Edit {
    aligned_by(old, new, T::eq)
}

/// [`aligned`], items equal when `same` says.
pub fn aligned_by<T>(old: &[T], new: &[T], same: impl Fn(&T, &T) -> bool) -> Edit {
    let skip = new
        .first()
        .and_then(|first| old.iter().position(|o| same(o, first)))
        .unwrap_or(old.len());
    let mut edit = Edit {
        removed: (0..skip).map(pos).collect(),
        added_at: Vec::new(),
    };
    let (mut i, mut j) = (skip, 0);
    while i < old.len() && j < new.len() {
        if !same(&old[i], &new[j]) {
            edit.removed.push(pos(i));
            edit.added_at.push(pos(j));
        }
        i += 1;
        j += 1;
    }
    edit.removed.extend((i..old.len()).map(pos));
    edit.added_at.extend((j..new.len()).map(pos));
    edit
}

/// Lists up to this long are matched without a map.
const SMALL: usize = 64;

/// The edit for a list whose items are found again by `key` (a running
/// task's id, a GPU's index) but may move, leave or change anywhere: the
/// items equal in both lists that keep their relative order, as many as
/// can (a longest increasing run of their old positions), are kept; every
/// other item of `old` is removed and every other item of `new` added.
/// Lists of a few dozen items, compared whole when nothing changed.
pub fn matched<T: PartialEq, K: std::hash::Hash + Eq>(
    old: &[T],
    new: &[T],
    key: impl Fn(&T) -> K,
) -> Edit {
    if old == new {
        return Edit::default();
    }
    // For each item of `new`, its old position when it is there unchanged
    // (the last old item of its key, as a map would keep it). A few dozen
    // items are looked for in place: no map to build.
    let was: Vec<Option<usize>> = if old.len() <= SMALL {
        let keys: Vec<K> = old.iter().map(&key).collect();
        (new.iter())
            .map(|t| {
                let k = key(t);
                keys.iter().rposition(|o| *o == k).filter(|&i| old[i] == *t)
            })
            .collect()
    } else {
        let at: std::collections::HashMap<K, usize> =
            old.iter().enumerate().map(|(i, t)| (key(t), i)).collect();
        (new.iter())
            .map(|t| at.get(&key(t)).copied().filter(|&i| old[i] == *t))
            .collect()
    };
    // Longest strictly increasing run of old positions (patience sorting):
    // `tails[k]` is the new position ending the best run of length k + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut before: Vec<Option<usize>> = vec![None; new.len()];
    for (j, w) in was.iter().enumerate() {
        let Some(i) = *w else { continue };
        let k = tails.partition_point(|&t| was[t].is_some_and(|o| o < i));
        before[j] = k.checked_sub(1).map(|k| tails[k]);
        if k == tails.len() {
            tails.push(j);
        } else {
            tails[k] = j;
        }
    }
    let mut kept_new = vec![false; new.len()];
    let mut kept_old = vec![false; old.len()];
    let mut j = tails.last().copied();
    while let Some(n) = j {
        kept_new[n] = true;
        if let Some(o) = was[n] {
            kept_old[o] = true;
        }
        j = before[n];
    }
    Edit {
        removed: (0..old.len()).filter(|&i| !kept_old[i]).map(pos).collect(),
        added_at: (0..new.len()).filter(|&j| !kept_new[j]).map(pos).collect(),
    }
}

/// `old` with `edit` applied, taking added items from `added` in order, or
/// `None` when the edit does not fit the lists: what a plugin does with an
/// edit, written once here to check the host's edits against.
pub fn apply<T: Clone>(old: &[T], edit: &Edit, added: &[T]) -> Option<Vec<T>> {
    let increasing = |l: &[u32]| l.windows(2).all(|w| w[0] < w[1]);
    if !increasing(&edit.removed) || !increasing(&edit.added_at) {
        return None;
    }
    if edit.added_at.len() != added.len()
        || edit
            .removed
            .last()
            .is_some_and(|&r| r as usize >= old.len())
    {
        return None;
    }
    let len = old.len() - edit.removed.len() + added.len();
    if edit.added_at.last().is_some_and(|&a| a as usize >= len) {
        return None;
    }
    let mut removed = edit.removed.iter().peekable();
    let mut kept = old.iter().enumerate().filter_map(|(i, t)| {
        if removed.peek().is_some_and(|&&r| r as usize == i) {
            removed.next();
            None
        } else {
            Some(t)
        }
    });
    let mut at = edit.added_at.iter().zip(added).peekable();
    let mut out = Vec::with_capacity(len);
    for k in 0..len {
        match at.peek() {
            Some((a, item)) if **a as usize == k => {
                out.push((*item).clone());
                at.next();
            }
            _ => out.push(kept.next()?.clone()),
        }
    }
    Some(out)
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
