//! `ls`'s note under a table its limit cut, without a daemon.

use super::*;

#[test]
fn only_a_listing_as_long_as_its_limit_may_have_been_cut() {
    assert!(may_be_cut(Some(100), 100));
    assert!(!may_be_cut(Some(100), 99), "fewer: every row came");
    assert!(!may_be_cut(None, 100_000), "no limit: every row came");
    // A daemon from before `limit` sends every row: nothing left out.
    assert!(!may_be_cut(Some(100), 10_000));
}

#[test]
fn the_note_counts_what_was_left_out_by_state_and_says_nothing_when_none_was() {
    let count = [
        api::StateCount {
            state: TaskState::Held,
            count: 2,
        },
        api::StateCount {
            state: TaskState::Queued,
            count: 5,
        },
    ];
    let note = cut_note(&[], Some(&count)).unwrap();
    assert!(
        note.starts_with("0 of 7 rows shown; not shown: 5 queued, 2 held."),
        "{note}"
    );
    assert_eq!(cut_note(&[], Some(&[])), None);
}
