//! Every edit the diffs make rebuilds the new list from the old one.

use super::*;

/// (key, value): the key orders, the value is a field that may change.
type Item = (u32, u8);

fn added<T: Clone>(new: &[T], e: &Edit) -> Vec<T> {
    e.added_at
        .iter()
        .map(|&a| new[a as usize].clone())
        .collect()
}

fn rebuilds<T: Clone + PartialEq + std::fmt::Debug>(old: &[T], new: &[T], e: &Edit) {
    assert_eq!(apply(old, e, &added(new, e)).as_deref(), Some(new), "{e:?}");
}

/// A small deterministic generator: the lists the properties run over.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

#[test]
fn an_unchanged_list_is_an_empty_edit() {
    let l: Vec<Item> = (0..100).map(|k| (k, 0)).collect();
    assert!(by_key(&l, true, &l, |x| x.0).0.is_empty());
    assert!(aligned(&l, &l).is_empty());
}

#[test]
fn by_key_keeps_what_stayed_and_names_only_what_moved() {
    let old: Vec<Item> = vec![(1, 0), (2, 0), (3, 0), (5, 0)];
    let new: Vec<Item> = vec![(2, 0), (3, 9), (4, 0), (5, 0), (6, 0)];
    let (e, _) = by_key(&old, true, &new, |x| x.0);
    assert_eq!(e.removed, [0, 2], "1 left; 3 changed a field");
    assert_eq!(e.added_at, [1, 2, 4], "3 again, 4 and 6 are new");
    rebuilds(&old, &new, &e);
}

#[test]
fn lists_out_of_key_order_are_replaced_whole_and_still_rebuilt() {
    let old: Vec<Item> = vec![(3, 0), (1, 0)];
    let new: Vec<Item> = vec![(1, 0), (3, 0)];
    let (e, new_sorted) = by_key(&old, sorted(&old, |x| x.0), &new, |x| x.0);
    assert_eq!(e, Edit::replace_all(2, 2));
    assert!(new_sorted);
    let (e, new_sorted) = by_key(&new, true, &old, |x| x.0);
    assert_eq!(e, Edit::replace_all(2, 2), "the new list out of order");
    assert!(!new_sorted);
    rebuilds(&old, &new, &e);
}

#[test]
fn aligned_drops_the_front_and_appends_the_back_of_a_window() {
    let old: Vec<Item> = vec![(1, 0), (2, 0), (3, 0), (4, 0)];
    let new: Vec<Item> = vec![(3, 0), (4, 1), (5, 0)];
    let e = aligned(&old, &new);
    assert_eq!(e.removed, [0, 1, 3]);
    assert_eq!(e.added_at, [1, 2]);
    rebuilds(&old, &new, &e);
    rebuilds(&old, &[], &aligned(&old, &[]));
    rebuilds(&[], &new, &aligned(&[], &new));
}

#[test]
fn every_edit_of_random_lists_rebuilds_the_new_list() {
    let mut r = Lcg(7);
    for round in 0..2_000 {
        let mut old: Vec<Item> = Vec::new();
        for k in 0..r.next(30) as u32 {
            if r.next(3) > 0 {
                old.push((k, r.next(2) as u8));
            }
        }
        let mut new: Vec<Item> = Vec::new();
        for &(k, v) in &old {
            if r.next(4) > 0 {
                new.push((k, if r.next(5) == 0 { v + 1 } else { v }));
            }
        }
        for _ in 0..r.next(4) {
            let k = r.next(40) as u32;
            if !new.iter().any(|x| x.0 == k) {
                new.push((k, 0));
            }
        }
        if round % 2 == 0 {
            new.sort();
        }
        let (e, new_sorted) = by_key(&old, sorted(&old, |x| x.0), &new, |x| x.0);
        assert_eq!(new_sorted, sorted(&new, |x| x.0));
        rebuilds(&old, &new, &e);
        rebuilds(&old, &new, &aligned(&old, &new));
    }
}

/// Lists of any shape: keys repeated, out of order, empty, or a list
/// that shrinks to nothing; `old_sorted` as the caller would compute it.
#[test]
fn every_edit_rebuilds_lists_with_repeated_keys_any_order_and_any_length() {
    let mut r = Lcg(11);
    let list = |r: &mut Lcg, len: u64| -> Vec<Item> {
        let n = r.next(len + 1);
        (0..n)
            .map(|_| (r.next(8) as u32, r.next(2) as u8))
            .collect()
    };
    for round in 0..5_000 {
        let old = list(&mut r, 12);
        let mut new = match round % 4 {
            0 => Vec::new(),
            1 => old.clone(),
            _ => list(&mut r, 12),
        };
        if round % 3 == 0 {
            new.sort();
        }
        let (e, new_sorted) = by_key(&old, sorted(&old, |x| x.0), &new, |x| x.0);
        assert_eq!(new_sorted, sorted(&new, |x| x.0), "{old:?} -> {new:?}");
        rebuilds(&old, &new, &e);
        rebuilds(&old, &new, &aligned(&old, &new));
        if old == new {
            assert!(aligned(&old, &new).is_empty());
        }
    }
}

#[test]
fn edits_that_do_not_fit_are_refused_not_applied() {
    let old: Vec<Item> = vec![(1, 0), (2, 0)];
    let bad = [
        Edit {
            removed: vec![2],
            added_at: vec![],
        },
        Edit {
            removed: vec![1, 0],
            added_at: vec![],
        },
        Edit {
            removed: vec![0, 0],
            added_at: vec![],
        },
        Edit {
            removed: vec![],
            added_at: vec![3],
        },
        Edit {
            removed: vec![],
            added_at: vec![0],
        },
    ];
    for e in &bad {
        let n = e.added_at.len();
        let items = vec![(9, 0); if e.added_at == [0] { 0 } else { n }];
        assert_eq!(apply(&old, e, &items), None, "{e:?}");
    }
}

/// Queues as they change between passes: long runs of equal rows, a row
/// changed, dropped or added here and there, sometimes a run given twice or
/// two rows swapped (out of order), in ascending or descending key order.
/// The runs passed by equality alone give the edit the model does: it
/// rebuilds the new list, says whether the new list is in order, and when it
/// is, removes only the old rows the new list does not hold as they were.
#[test]
fn by_key_passes_runs_of_equal_rows_and_still_rebuilds_and_orders_right() {
    let mut r = Lcg(13);
    for round in 0..3_000 {
        let desc = round % 2 == 1;
        let key = |x: &Item| {
            if desc {
                -i64::from(x.0)
            } else {
                i64::from(x.0)
            }
        };
        let mut k = 0;
        let mut old: Vec<Item> = (0..r.next(60))
            .map(|_| {
                k += 1 + r.next(3) as u32;
                (k, r.next(2) as u8)
            })
            .collect();
        if desc {
            old.reverse();
        }
        let mut new = old.clone();
        for _ in 0..r.next(6) {
            let at = r.next(new.len() as u64 + 1) as usize;
            match r.next(6) {
                0 if at < new.len() => drop(new.remove(at)),
                1 if at < new.len() => new[at].1 += 1,
                2 if at < new.len() => new[at].0 += 1,
                3 if at + 1 < new.len() => new.swap(at, at + 1),
                4 => {
                    let run: Vec<Item> = new[at..].iter().take(4).copied().collect();
                    let to = r.next(new.len() as u64 + 1) as usize;
                    new.splice(to..to, run);
                }
                _ => new.insert(at, (r.next(200) as u32, 0)),
            }
        }
        let (e, new_sorted) = by_key(&old, sorted(&old, key), &new, key);
        assert_eq!(new_sorted, sorted(&new, key), "{old:?} -> {new:?}");
        rebuilds(&old, &new, &e);
        if new_sorted {
            let gone = old.iter().filter(|o| !new.contains(o)).count();
            assert_eq!(e.removed.len(), gone, "{old:?} -> {new:?}: {e:?}");
        }
    }
}

/// The longest common subsequence of `a` and `b` (equal items), by the
/// textbook table: what `matched` must keep when keys are distinct.
fn common(a: &[Item], b: &[Item]) -> usize {
    let mut t = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            t[i][j] = if a[i] == b[j] {
                t[i + 1][j + 1] + 1
            } else {
                t[i + 1][j].max(t[i][j + 1])
            };
        }
    }
    t[0][0]
}

#[test]
fn matched_keeps_the_most_items_that_stay_in_order_through_moves_and_changes() {
    let mut r = Lcg(11);
    for round in 0..2_000 {
        // Running tasks: distinct ids, in any order; some end (the last
        // takes the place of one that ends, as `swap_remove` does), some
        // change a field, some start at the end. One list in eight is
        // longer than what is matched without a map.
        let most = if round % 8 == 0 { 150 } else { 24 };
        let mut old: Vec<Item> = (0..r.next(most) as u32).map(|k| (k, 0)).collect();
        for i in (1..old.len()).rev() {
            old.swap(i, r.next(i as u64 + 1) as usize);
        }
        let mut new = old.clone();
        for _ in 0..r.next(4) {
            if !new.is_empty() {
                let i = r.next(new.len() as u64) as usize;
                new.swap_remove(i);
            }
        }
        for x in &mut new {
            if r.next(8) == 0 {
                x.1 += 1;
            }
        }
        for k in 0..r.next(3) as u32 {
            new.push((100 + k, 0));
        }
        let e = matched(&old, &new, |x| x.0);
        rebuilds(&old, &new, &e);
        let kept = new.len() - e.added_at.len();
        assert_eq!(kept, old.len() - e.removed.len());
        assert_eq!(kept, common(&old, &new), "{old:?} -> {new:?}: {e:?}");
    }
}

#[test]
fn matched_sends_nothing_for_an_unchanged_list_and_handles_repeated_keys() {
    let same: Vec<Item> = vec![(3, 1), (1, 0), (2, 5)];
    assert!(matched(&same, &same, |x| x.0).is_empty());
    // Keys repeated (a hostile or buggy list): still rebuilt exactly.
    let old: Vec<Item> = vec![(1, 0), (1, 0), (2, 0), (1, 1)];
    let new: Vec<Item> = vec![(1, 0), (2, 0), (1, 0), (1, 0)];
    rebuilds(&old, &new, &matched(&old, &new, |x| x.0));
    rebuilds(&[], &new, &matched(&[], &new, |x| x.0));
    rebuilds(&old, &[], &matched(&old, &[], |x| x.0));
}
