//! How the usage list of the pass being evaluated came from the one this
//! instance was shown in its previous pass: the edit the host sent, for a
//! policy that keeps its own sums over the usage between passes (a week of
//! runs walked every pass is most of such a policy's time; the edit names
//! the few that changed).
//!
//! An answer must still depend on the snapshot alone: a policy that uses
//! the edit keeps what it derives from the usage exactly as it would derive
//! it afresh (integer sums, not running float totals) and starts afresh
//! whenever [`usage_edit`] gives nothing or an edit from a list it does not
//! hold. fair-share's `usage.rs` is the worked example.

use std::cell::RefCell;

/// The usage list of one pass as the edit of another: `to`'s list is
/// `from`'s with the items at `removed` dropped (ascending positions in
/// `from`'s list), then this pass's items at `added_at` (ascending
/// positions in `to`'s list) placed in between. Every other item is the
/// one at its place in `from`'s list, unchanged. `from` 0 is the empty
/// list: the snapshot came whole, and every item is new.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UsageEdit {
    /// The list it edits: a token of the previous pass this instance was
    /// shown, or 0 (nothing: the snapshot came whole).
    pub from: u64,
    /// This pass's list: the token the next pass's `from` names if it
    /// follows this one.
    pub to: u64,
    /// Positions in `from`'s list that left.
    pub removed: Vec<u32>,
    /// Positions in `to`'s list that hold new items.
    pub added_at: Vec<u32>,
}

thread_local! {
    /// The pass being evaluated on this thread: its usage list's token and
    /// edit. Per thread, not per process: natively (unit tests run in
    /// parallel) another thread's pass is not this one's.
    static PASS: RefCell<Option<Pass>> = const { RefCell::new(None) };
}

/// What the SDK learnt of the pass being evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pass {
    /// This pass's token.
    pub(crate) to: u64,
    /// The previous pass's token (0 when this pass's snapshot came whole:
    /// the first pass, or after the plugin was reloaded or fell behind).
    pub(crate) from: u64,
    /// The edit from it.
    pub(crate) removed: Vec<u32>,
    pub(crate) added_at: Vec<u32>,
}

/// The edit from the usage list this instance was shown in its previous
/// pass to this pass's, during a pass (from 0, every item new, when this
/// pass's snapshot came whole); `None` outside a pass and in native tests.
pub fn usage_edit() -> Option<UsageEdit> {
    PASS.with_borrow(|pass| {
        let p = pass.as_ref()?;
        Some(UsageEdit {
            from: p.from,
            to: p.to,
            removed: p.removed.clone(),
            added_at: p.added_at.clone(),
        })
    })
}

/// Runs `f` with `pass` as the pass being evaluated, and forgets it after,
/// even when `f` panics (a pass left behind would describe a list the next
/// caller does not hold).
pub(crate) fn during<T>(pass: Pass, f: impl FnOnce() -> T) -> T {
    struct Forget;
    impl Drop for Forget {
        fn drop(&mut self) {
            set(None);
        }
    }
    set(Some(pass));
    let _forget = Forget;
    f()
}

fn set(pass: Option<Pass>) {
    PASS.with_borrow_mut(|p| *p = pass);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edit_is_there_during_a_pass_only() {
        assert_eq!(usage_edit(), None, "outside a pass");
        let edited = Pass {
            to: 7,
            from: 6,
            removed: vec![0, 1],
            added_at: vec![3],
        };
        let seen = during(edited, usage_edit);
        assert_eq!(
            seen,
            Some(UsageEdit {
                from: 6,
                to: 7,
                removed: vec![0, 1],
                added_at: vec![3],
            })
        );
        assert_eq!(usage_edit(), None, "forgotten after the pass");
    }

    fn pass(to: u64) -> Pass {
        Pass {
            to,
            from: to - 1,
            removed: vec![],
            added_at: vec![0],
        }
    }

    #[test]
    fn a_pass_that_panics_is_forgotten_all_the_same() {
        let hit = std::panic::catch_unwind(|| during(pass(9), || panic!("policy bug")));
        assert!(hit.is_err());
        assert_eq!(usage_edit(), None, "no pass is being evaluated");
    }

    #[test]
    fn a_pass_on_another_thread_is_not_this_threads() {
        let (entered, wait) = std::sync::mpsc::channel();
        let (release, go) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            during(pass(5), || {
                let _ = entered.send(());
                let _ = go.recv();
                usage_edit()
            })
        });
        wait.recv().expect("the other thread entered its pass");
        // A native test evaluating outside a pass while another thread is
        // inside one (cargo runs tests in parallel).
        let here = usage_edit();
        let _ = release.send(());
        let there = other.join().expect("the other thread");
        assert_eq!(here, None);
        assert_eq!(there.map(|e| e.to), Some(5));
    }

    use crate::abi;
    use crate::kept::Kept;

    /// A change that edits only the usage: `added` are (project string,
    /// started_at, ended_at); a `None` edit leaves the usage out.
    fn change(
        base: u64,
        to: u64,
        edit: Option<(Vec<u32>, Vec<u32>)>,
        added: &[(u32, i64, i64)],
    ) -> abi::Snapshot {
        abi::Snapshot {
            generation: to,
            base,
            now: 1_000,
            time_zone: 0,
            utc_offset: 0,
            strings: abi::Strings {
                chars: if base == 0 {
                    "UTCvisionbio".into()
                } else {
                    String::new()
                },
                ends: if base == 0 { vec![3, 9, 12] } else { vec![] },
            },
            queue: None,
            running: None,
            gpus: None,
            usage: edit.map(|(removed, added_at)| abi::UsageChange {
                edit: abi::Edit { removed, added_at },
                added: Some(abi::Usage {
                    project: added.iter().map(|a| a.0).collect(),
                    gpus: vec![1; added.len()],
                    started_at: added.iter().map(|a| a.1).collect(),
                    ended_at: added.iter().map(|a| a.2).collect(),
                }),
            }),
        }
    }

    #[test]
    fn each_change_names_how_its_usage_came_from_the_last_one_or_from_nothing() {
        let mut k = Kept::new();
        let whole = change(0, 3, Some((vec![], vec![0, 1])), &[(1, 0, 10), (2, 5, 20)]);
        k.apply(whole).unwrap();
        let whole = Pass {
            to: 3,
            from: 0,
            removed: vec![],
            added_at: vec![0, 1],
        };
        assert_eq!(k.take_pass(), Some(whole), "came whole: every run new");
        assert_eq!(k.take_pass(), None, "taken once");
        let edited = change(3, 4, Some((vec![0], vec![1])), &[(1, 30, 40)]);
        k.apply(edited).unwrap();
        let pass = k.take_pass();
        assert_eq!(
            pass,
            Some(Pass {
                to: 4,
                from: 3,
                removed: vec![0],
                added_at: vec![1],
            })
        );
        let starts: Vec<i64> = k.snapshot().usage.iter().map(|u| u.started_at).collect();
        assert_eq!(
            starts,
            [5, 30],
            "the edit the pass names is the one applied"
        );
        // The usage left out: unchanged, an empty edit from the last pass.
        k.apply(change(4, 5, None, &[])).unwrap();
        assert_eq!(
            k.take_pass(),
            Some(Pass {
                to: 5,
                from: 4,
                removed: vec![],
                added_at: vec![],
            })
        );
        // A base not held: nothing held, nothing to name.
        assert!(k.apply(change(9, 10, None, &[])).is_err());
        assert_eq!(k.take_pass(), None);
    }
}
