//! [`edit_list`], which moves the kept records in place: every edit that
//! fits gives the list a plain model gives, and every other one is refused
//! with the list untouched; items are dropped once each, whatever their
//! size or their drop does (the owning ones under Miri:
//! `cargo +nightly miri test --lib -- edits_of_owning every_small_edit
//! zero_sized_items a_panic_dropping`).

use super::*;

/// What an edit should give, written plainly: `None` when it does not fit.
fn model(list: &[u32], removed: &[u32], added_at: &[u32], added: &[u32]) -> Option<Vec<u32>> {
    let up = |l: &[u32]| l.windows(2).all(|w| w[0] < w[1]);
    if !up(removed) || !up(added_at) || added.len() != added_at.len() {
        return None;
    }
    if removed.iter().any(|&r| r as usize >= list.len()) {
        return None;
    }
    let mut kept: Vec<u32> = (0..list.len())
        .filter(|i| !removed.contains(&(*i as u32)))
        .map(|i| list[i])
        .collect();
    let len = kept.len() + added.len();
    if added_at.iter().any(|&a| a as usize >= len) {
        return None;
    }
    for (&a, &x) in added_at.iter().zip(added) {
        kept.insert(a as usize, x);
    }
    Some(kept)
}

use crate::test_lcg::Lcg;

impl Lcg {
    /// `n` positions below `below`: mostly ascending and distinct.
    fn positions(&mut self, n: u64, below: u64) -> Vec<u32> {
        let mut l: Vec<u32> = (0..n).map(|_| self.next(below) as u32).collect();
        if self.next(4) > 0 {
            l.sort();
            l.dedup();
        }
        l
    }
}

#[test]
fn any_edit_is_applied_exactly_or_refused_never_half_or_a_panic() {
    let mut r = Lcg(3);
    for _ in 0..20_000 {
        let list: Vec<u32> = (0..r.next(7) as u32).collect();
        let (n, m) = (r.next(4), r.next(4));
        let removed = r.positions(n, 8);
        let added_at = r.positions(m, 10);
        let extra = u32::from(r.next(5) == 0);
        let added: Vec<u32> = (0..added_at.len() as u32 + extra)
            .map(|i| 100 + i)
            .collect();
        let mut got = list.clone();
        let done = edit_list(&mut got, &removed, &added_at, added.iter().copied());
        let case = format!("{list:?} {removed:?} {added_at:?} {added:?}");
        match model(&list, &removed, &added_at, &added) {
            Some(want) => assert_eq!((done, got), (Ok(()), want), "{case}"),
            None => assert_eq!((done, got), (Err(NotHeld), list), "{case}"),
        }
    }
}

/// The same edits on items that own memory (`cargo +nightly miri test -p
/// nightjar-sdk kept` checks that each is dropped exactly once, none read
/// after it moved): the list the model gives, and every item dropped or kept.
#[test]
fn edits_of_owning_items_drop_each_removed_one_once_and_keep_the_rest() {
    let mut r = Lcg(11);
    for _ in 0..if cfg!(miri) { 300 } else { 5_000 } {
        let list: Vec<u32> = (0..r.next(9) as u32).collect();
        let (n, m) = (r.next(5), r.next(5));
        let removed = r.positions(n, 10);
        let added_at = r.positions(m, 12);
        let added: Vec<u32> = (0..added_at.len() as u32).map(|i| 100 + i).collect();
        let owned: Vec<String> = list.iter().map(|x| x.to_string()).collect();
        let mut got = owned.clone();
        let done = edit_list(
            &mut got,
            &removed,
            &added_at,
            added.iter().map(|x| x.to_string()),
        );
        let want = model(&list, &removed, &added_at, &added)
            .map(|l| l.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        match want {
            Some(want) => assert_eq!((done, got), (Ok(()), want)),
            None => assert_eq!((done, got), (Err(NotHeld), owned), "refused untouched"),
        }
    }
}

/// Every edit of lists of up to `max_len` items with positions below
/// `max_len + 2`, each refused one leaving the list as it was.
fn every_small_edit(max_len: u32, mut check: impl FnMut(&[u32], &[u32], &[u32])) {
    let subsets = |below: u32| -> Vec<Vec<u32>> {
        (0..1u32 << below)
            .map(|bits| (0..below).filter(|b| bits >> b & 1 == 1).collect())
            .collect()
    };
    for len in 0..=max_len {
        let list: Vec<u32> = (0..len).collect();
        for removed in subsets(max_len + 1) {
            for added_at in subsets(max_len + 2) {
                check(&list, &removed, &added_at);
            }
        }
    }
}

/// Removing everything, adding at 0 or past the old end, removing and
/// adding at the same positions: each edit of small lists of owning items
/// gives the model's list, and a refused one leaves the list untouched
/// (Miri: each item dropped once, none read after it moved).
#[test]
fn every_small_edit_gives_the_model_s_list_or_leaves_the_list_untouched() {
    let max_len = if cfg!(miri) { 2 } else { 4 };
    every_small_edit(max_len, |list, removed, added_at| {
        let added: Vec<u32> = (0..added_at.len() as u32).map(|i| 100 + i).collect();
        let owned = |l: &[u32]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let mut got = owned(list);
        let done = edit_list(
            &mut got,
            removed,
            added_at,
            added.iter().map(|x| x.to_string()),
        );
        let case = format!("{list:?} {removed:?} {added_at:?}");
        match model(list, removed, added_at, &added) {
            Some(want) => assert_eq!((done, got), (Ok(()), owned(&want)), "{case}"),
            None => assert_eq!((done, got), (Err(NotHeld), owned(list)), "{case}"),
        }
    });
}

#[test]
fn positions_at_the_top_of_u32_or_a_column_of_the_wrong_length_are_refused_untouched() {
    let list: Vec<String> = ["a", "b", "c"].map(String::from).into();
    let item = || std::iter::once(String::from("x"));
    let none = || std::iter::empty::<String>();
    let max = u32::MAX;
    let cases: [(&[u32], &[u32], bool); 7] = [
        (&[max], &[], false),
        (&[0, max], &[], false),
        (&[], &[max], true),
        (&[0], &[max], true),
        (&[0, 1, 2], &[1], true),
        (&[], &[0], false),
        (&[max - 1, max], &[max], true),
    ];
    for (removed, added_at, one) in cases {
        let mut got = list.clone();
        let done = if one {
            edit_list(&mut got, removed, added_at, item())
        } else {
            edit_list(&mut got, removed, added_at, none())
        };
        assert_eq!(
            (done, &got),
            (Err(NotHeld), &list),
            "{removed:?} {added_at:?}"
        );
    }
}

/// A zero-sized item that counts its drops.
struct Unit;

thread_local! {
    static UNITS_DROPPED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Drop for Unit {
    fn drop(&mut self) {
        UNITS_DROPPED.with(|d| d.set(d.get() + 1));
    }
}

#[test]
fn zero_sized_items_are_edited_as_any_others_each_removed_one_dropped_once() {
    let max_len = if cfg!(miri) { 2 } else { 4 };
    every_small_edit(max_len, |list, removed, added_at| {
        let mut got: Vec<Unit> = list.iter().map(|_| Unit).collect();
        let before = UNITS_DROPPED.with(|d| d.get());
        let done = edit_list(&mut got, removed, added_at, added_at.iter().map(|_| Unit));
        let dropped = UNITS_DROPPED.with(|d| d.get()) - before;
        let want = model(list, removed, added_at, added_at);
        match want {
            Some(want) => {
                assert_eq!(
                    (done, got.len(), dropped),
                    (Ok(()), want.len(), removed.len())
                );
            }
            // The added items the iterator never gave are not made at all.
            None => assert_eq!((done, got.len(), dropped), (Err(NotHeld), list.len(), 0)),
        }
    });
}

/// An item that records its drop, and panics in it when told to. It owns
/// no memory, so the items a panic leaks leave nothing for Miri to report.
struct Loud {
    id: u32,
    panics: bool,
}

thread_local! {
    static LOUD_DROPPED: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for Loud {
    fn drop(&mut self) {
        LOUD_DROPPED.with(|d| d.borrow_mut().push(self.id));
        if self.panics {
            panic!("item {} will not go", self.id);
        }
    }
}

/// A removed item whose drop panics: the panic reaches the caller, and no
/// item is dropped twice (the ones not yet moved are leaked instead), nor
/// is one left in the list read after it moved (Miri).
#[test]
fn a_panic_dropping_a_removed_item_drops_nothing_twice() {
    for panicking in [1u32, 3, 5] {
        LOUD_DROPPED.with(|d| d.borrow_mut().clear());
        let mut list: Vec<Loud> = (0..6)
            .map(|id| Loud {
                id,
                panics: id == panicking,
            })
            .collect();
        let added = (10..12).map(|id| Loud { id, panics: false });
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            edit_list(&mut list, &[1, 3, 5], &[0, 4], added)
        }));
        assert!(
            outcome.is_err(),
            "item {panicking}'s panic reaches the caller"
        );
        let kept: Vec<u32> = list.iter().map(|t| t.id).collect();
        assert_eq!(kept, [0], "only what never moves is left in the list");
        drop(list);
        let log = LOUD_DROPPED.with(|d| std::mem::take(&mut *d.borrow_mut()));
        let mut once = log.clone();
        once.sort();
        once.dedup();
        assert_eq!(once.len(), log.len(), "dropped twice: {log:?}");
        assert!(once.contains(&panicking) && once.contains(&0), "{log:?}");
    }
}
