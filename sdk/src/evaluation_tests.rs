//! An answer as the host reads it: tasks by position, each reason once,
//! each verdict naming the text its reason has.

use super::*;
use crate::Priority;
use crate::testing::SnapshotBuilder;

#[test]
fn tasks_go_by_position_and_repeated_reasons_once() {
    let mut b = SnapshotBuilder::at(0).running(70, "p", vec![0], 0);
    for id in 1..=40 {
        b = b.queued(id * 10, "p", Priority::Normal, 0);
    }
    let s = b.build();
    let mut e = Evaluation::default();
    e.allow(10, 5);
    e.defer(20, "later", None);
    e.defer(30, "later", Some(9));
    e.reject(400, "never");
    // Out of order: found through the index of every id.
    e.allow(40, 1);
    e.allow(999, 1);
    e.allow(10, 2);
    e.preempt(70, "never");
    e.preempt(71, "gone");
    let w = to_abi(&s, e, 7);
    assert_eq!(w.generation, 7);
    assert_eq!(w.reasons, ["later", "never", "gone"]);
    assert_eq!(w.scores.len(), 40);
    assert_eq!((w.scores[0], w.scores[3], w.scores[4]), (5, 1, 0));
    assert_eq!(
        w.deferred.task,
        [1, 2, NOT_THERE, NOT_THERE],
        "an unknown id and a second verdict are sent as positions that are not there"
    );
    assert_eq!(w.deferred.reason[..2], [0, 0]);
    assert_eq!(w.deferred.until[..2], [0, 9], "0: not said");
    assert_eq!(
        (w.rejected.task.clone(), w.rejected.reason.clone()),
        (vec![39], vec![1])
    );
    let pre: Vec<(u32, u32)> = w.preempt.iter().map(|p| (p.task, p.reason)).collect();
    assert_eq!(pre, [(0, 1), (NOT_THERE, 2)]);
}

#[test]
fn clones_of_reasons_given_out_of_turn_are_written_once_each() {
    let mut b = SnapshotBuilder::at(0);
    for id in 1..=6 {
        b = b.queued(id, "p", Priority::Normal, 0);
    }
    let s = b.build();
    let (short, long) = (Reason::from("overruns 5m"), Reason::from("overruns 2h"));
    let mut e = Evaluation::default();
    for id in 1..=6 {
        let r = if id % 2 == 0 { &short } else { &long };
        e.defer(id, r.clone(), None);
    }
    let w = to_abi(&s, e, 1);
    assert_eq!(w.reasons, ["overruns 2h", "overruns 5m"]);
    assert_eq!(w.deferred.reason, [0, 1, 0, 1, 0, 1]);
}

#[test]
fn an_answer_of_zero_scores_sends_no_score_column() {
    let s = SnapshotBuilder::at(0)
        .queued(1, "p", Priority::Normal, 0)
        .queued(2, "p", Priority::Normal, 0)
        .build();
    let mut e = Evaluation::default();
    e.allow(1, 0);
    assert!(to_abi(&s, e, 1).scores.is_empty());
    assert!(to_abi(&s, Evaluation::default(), 1).scores.is_empty());
}

/// Reasons of every kind, given in any order: clones of a few, fresh ones
/// with the same text, empty ones (`Reason::default()` may share one
/// allocation among all), and ones dropped as soon as they are given, whose
/// memory the next reason made may take. Every index names the text its
/// reason has, a reason's clones share one index (but where the one given
/// before has the same text), and the table never grows past the reasons
/// given.
#[test]
fn every_reason_is_named_by_an_index_to_its_own_text() {
    let mut seed = 5u64;
    let mut next = |below: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % below
    };
    for _ in 0..200 {
        let kept: Vec<Reason> = (0..4).map(|k| Reason::from(format!("kept {k}"))).collect();
        let mut reasons = Reasons::default();
        let mut given: Vec<(String, u32, Option<usize>)> = Vec::new();
        for _ in 0..next(40) {
            let k = next(4) as usize;
            let (reason, clone_of) = match next(6) {
                0 | 1 => (kept[k].clone(), Some(k)),
                2 => (Reason::from(format!("kept {k}")), None),
                3 => (Reason::default(), None),
                4 => (Reason::from(String::new()), None),
                _ => (Reason::from(format!("short-lived {}", next(3))), None),
            };
            let text = reason.as_str().to_string();
            given.push((text, reasons.add(reason), clone_of));
        }
        assert!(reasons.table.len() <= given.len());
        for (text, i, _) in &given {
            let written = reasons.table.get(*i as usize).map(Reason::as_str);
            assert_eq!(written, Some(text.as_str()), "{given:?}");
        }
        // A clone given just after the same text takes that one's index;
        // any other clone of one reason finds the same entry.
        for (k, r) in kept.iter().enumerate() {
            let mut at = (given.iter().enumerate())
                .filter(|(n, g)| g.2 == Some(k) && (*n == 0 || given[n - 1].0 != g.0))
                .map(|(_, g)| g.1);
            let first = at.next();
            assert!(at.all(|i| Some(i) == first), "{r}: {given:?}");
        }
        // The table as sent: every text at its index, kept clones or not.
        let sent = reasons.table();
        for (text, i, _) in &given {
            assert_eq!(sent.get(*i as usize), Some(text), "{given:?}");
        }
    }
}
