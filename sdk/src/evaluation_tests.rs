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
    let mut rng = crate::test_lcg::Lcg(5);
    let mut next = |below: u64| rng.next(below);
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

/// Answers naming tasks in any order: ahead of the last one found, behind
/// it, twice, or not queued at all (ids far apart too, which the index
/// hashes). Every verdict lands at its task's own position, and a second
/// verdict or an unknown id is sent as a position that is not there, as a
/// search of the whole queue for each would place them.
#[test]
fn verdicts_in_any_order_land_where_a_search_of_the_whole_queue_puts_them() {
    let mut rng = crate::test_lcg::Lcg(11);
    let mut next = |below: u64| rng.next(below.max(1));
    for round in 0..2000 {
        let mut ids: Vec<i64> = Vec::new();
        for _ in 0..next(30) {
            let id = next(60) as i64 * [1, 1 << 20][next(2) as usize];
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let n = ids.len();
        let mut b = SnapshotBuilder::at(0);
        for &id in &ids {
            b = b.queued(id, "p", Priority::Normal, 0);
        }
        let s = b.build();
        let mut e = Evaluation::default();
        let mut cursor = 0;
        for _ in 0..next(40) {
            let id = match (next(5), n) {
                (_, 0) | (0, _) => 5000 + next(3) as i64,
                (1, _) => ids[next(n as u64) as usize],
                _ => {
                    cursor = (cursor + next(3) as usize) % n;
                    ids[cursor]
                }
            };
            match next(3) {
                0 => e.defer(id, format!("r{}", next(3)), Some(1 + next(5) as i64)),
                1 => e.reject(id, format!("x{}", next(2))),
                _ => e.allow(id, next(4) as i32),
            }
        }
        let (mut judged, mut scores) = (vec![false; n], vec![0; n]);
        let (mut deferred, mut rejected) = (Vec::new(), Vec::new());
        for v in &e.verdicts {
            let at = ids.iter().position(|&x| x == v.task);
            let Some(at) = at.filter(|&at| !std::mem::replace(&mut judged[at], true)) else {
                deferred.push((NOT_THERE, String::new()));
                continue;
            };
            match &v.verdict {
                Verdict::Allow(score) => scores[at] = *score,
                Verdict::Defer(d) => deferred.push((at as u32, d.reason.to_string())),
                Verdict::Reject(r) => rejected.push((at as u32, r.to_string())),
            }
        }
        let w = to_abi(&s, e, 1);
        let text = |t: u32, r: u32| match t {
            NOT_THERE => String::new(),
            _ => w.reasons[r as usize].clone(),
        };
        let sent_scores = if w.scores.is_empty() {
            vec![0; n]
        } else {
            w.scores.clone()
        };
        assert_eq!(sent_scores, scores, "round {round}");
        let sent: Vec<_> = (w.deferred.task.iter().zip(&w.deferred.reason))
            .map(|(&t, &r)| (t, text(t, r)))
            .collect();
        assert_eq!(sent, deferred, "round {round}");
        let sent: Vec<_> = (w.rejected.task.iter().zip(&w.rejected.reason))
            .map(|(&t, &r)| (t, text(t, r)))
            .collect();
        assert_eq!(sent, rejected, "round {round}");
    }
}
