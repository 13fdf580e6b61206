//! Reading an incremental answer: columns become verdicts by id, and every
//! malformed answer is an invalid answer, never a panic.

use super::*;
use crate::plugins::limits::MAX_REASON;
use crate::plugins::tests::{snapshot, task};

fn three() -> p::Snapshot {
    snapshot(vec![
        task(10, "a", p::Priority::Normal, 0),
        task(20, "a", p::Priority::Normal, 1),
        task(30, "a", p::Priority::Normal, 2),
    ])
}

fn answer(scores: Vec<i32>, reasons: &[&str]) -> w::Evaluation {
    w::Evaluation {
        generation: 1,
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
        scores,
        deferred: w::Deferrals {
            task: vec![],
            reason: vec![],
            until: vec![],
        },
        rejected: w::Rejections {
            task: vec![],
            reason: vec![],
        },
        closed_gpus: vec![],
        preempt: vec![],
    }
}

#[test]
fn scores_stay_a_column_read_as_allows_and_deferrals_override_them() {
    let mut e = answer(vec![5, 6, 7], &["later", "never"]);
    e.deferred = w::Deferrals {
        task: vec![1],
        reason: vec![0],
        until: vec![99],
    };
    e.rejected = w::Rejections {
        task: vec![2],
        reason: vec![1],
    };
    let got = read(&three(), e).unwrap();
    assert_eq!(
        got.scores,
        [5, 0, 0],
        "the scores stay one column, 0 at the places verdicts name"
    );
    let want = vec![
        p::TaskVerdict {
            task: 10,
            verdict: p::Verdict::Allow(5),
        },
        p::TaskVerdict {
            task: 20,
            verdict: p::Verdict::Defer(p::Deferral {
                reason: "later".into(),
                until: Some(99),
            }),
        },
        p::TaskVerdict {
            task: 30,
            verdict: p::Verdict::Reject("never".into()),
        },
    ];
    assert_eq!(got.all_verdicts(&three().queue), want);
    assert_eq!(
        got.verdicts,
        want[1..],
        "the named verdicts, in queue order"
    );
}

#[test]
fn no_scores_means_no_allow_verdicts_and_until_zero_is_not_said() {
    let mut e = answer(vec![], &["later"]);
    e.deferred = w::Deferrals {
        task: vec![0],
        reason: vec![0],
        until: vec![0],
    };
    let got = read(&three(), e).unwrap();
    assert_eq!(got.verdicts.len(), 1);
    assert!(matches!(
        &got.verdicts[0].verdict,
        p::Verdict::Defer(d) if d.until.is_none()
    ));
}

#[test]
fn malformed_answers_are_invalid_with_what_was_wrong() {
    let s = three();
    let defer = |task: Vec<u32>, reason: Vec<u32>, until: Vec<i64>| {
        let mut e = answer(vec![], &["x"]);
        e.deferred = w::Deferrals {
            task,
            reason,
            until,
        };
        e
    };
    let mut reject_twice = answer(vec![], &["x"]);
    reject_twice.rejected = w::Rejections {
        task: vec![0, 0],
        reason: vec![0, 0],
    };
    let mut both = defer(vec![1], vec![0], vec![0]);
    both.rejected = w::Rejections {
        task: vec![1],
        reason: vec![0],
    };
    let mut gpu = answer(vec![], &["x"]);
    gpu.closed_gpus.push(w::ClosedGpu {
        index: 9,
        reason: 0,
    });
    let mut preempt = answer(vec![], &["x"]);
    preempt.preempt.push(w::Preemption { task: 0, reason: 0 });
    for (e, says) in [
        (answer(vec![1, 2], &[]), "2 scores for 3 queued tasks"),
        (
            defer(vec![0], vec![], vec![0]),
            "with 0 reasons and 1 times",
        ),
        (
            defer(vec![0], vec![0], vec![]),
            "with 1 reasons and 0 times",
        ),
        (defer(vec![3], vec![0], vec![0]), "queue index 3"),
        (defer(vec![u32::MAX], vec![0], vec![0]), "not in the queue"),
        (defer(vec![0], vec![1], vec![0]), "names reason 1"),
        (
            defer(vec![0, 1, 2, 0], vec![0; 4], vec![0; 4]),
            "4 deferrals and rejections for 3",
        ),
        (reject_twice, "twice"),
        (both, "defers or rejects task 20 twice"),
        (answer(vec![], &["x"]), "1 reasons for 0"),
        (gpu, "GPU 9 which does not exist"),
        (preempt, "tasks preempted than exist"),
        (
            defer(vec![0], vec![0], vec![0]).tap_reason(&"r".repeat(MAX_REASON + 1)),
            "longer than 4096",
        ),
    ] {
        let err = read(&s, e).unwrap_err();
        assert_eq!(err.cause(), "invalid-answer");
        assert!(err.to_string().contains(says), "{says}: {err}");
    }
}

trait TapReason {
    fn tap_reason(self, r: &str) -> Self;
}

impl TapReason for w::Evaluation {
    fn tap_reason(mut self, r: &str) -> Self {
        self.reasons = vec![r.to_string()];
        self
    }
}

#[test]
fn the_other_malformed_columns_and_indexes_are_invalid_too() {
    let mut s = three();
    s.running = vec![p::RunningTask {
        id: 70,
        name: "r".into(),
        project: "a".into(),
        priority: p::Priority::Normal,
        gpus: vec![0],
        started_at: 0,
        preemptible: true,
    }];
    let mut short_reasons = answer(vec![], &["x"]);
    short_reasons.rejected = w::Rejections {
        task: vec![0, 1],
        reason: vec![0],
    };
    let mut reject_past = answer(vec![1, 2, 3], &["x"]);
    reject_past.rejected = w::Rejections {
        task: vec![7],
        reason: vec![0],
    };
    let mut preempt_past = answer(vec![], &["x"]);
    preempt_past
        .preempt
        .push(w::Preemption { task: 1, reason: 0 });
    let mut gpu_reason = answer(vec![], &["x"]);
    gpu_reason.closed_gpus.push(w::ClosedGpu {
        index: 0,
        reason: u32::MAX,
    });
    let mut huge = answer(vec![], &["x"]);
    huge.deferred = w::Deferrals {
        task: vec![0; 1 << 20],
        reason: vec![0; 1 << 20],
        until: vec![0; 1 << 20],
    };
    let far = format!("names reason {}", u32::MAX);
    for (e, says) in [
        (answer(vec![1, 2, 3, 4], &[]), "4 scores for 3 queued tasks"),
        (short_reasons, "rejections of 2 tasks with 1 reasons"),
        (reject_past, "queue index 7"),
        (
            preempt_past,
            "preempts running index 1, which is not running",
        ),
        (gpu_reason, far.as_str()),
        (huge, "1048576 deferrals and rejections for 3 queued tasks"),
    ] {
        let err = read(&s, e).unwrap_err();
        assert_eq!(err.cause(), "invalid-answer", "{says}");
        assert!(err.to_string().contains(says), "{says}: {err}");
    }
}

/// With a score column beside them, deferrals and rejections named out of
/// order land in queue order with their places' scores zeroed, and a place
/// named twice or past the queue is refused before any score is touched.
#[test]
fn a_score_column_beside_hostile_places_is_refused_and_in_order_ones_zeroed() {
    let s = three();
    let with = |deferred: Vec<u32>, rejected: Vec<u32>| {
        let mut e = answer(vec![5, 6, 7], &["x"]);
        let n = deferred.len();
        e.deferred = w::Deferrals {
            task: deferred,
            reason: vec![0; n],
            until: vec![0; n],
        };
        let n = rejected.len();
        e.rejected = w::Rejections {
            task: rejected,
            reason: vec![0; n],
        };
        e
    };
    for (e, says) in [
        (with(vec![2, 2], vec![]), "defers or rejects task 30 twice"),
        (with(vec![2], vec![2]), "defers or rejects task 30 twice"),
        (
            with(vec![], vec![1, 0, 1]),
            "defers or rejects task 20 twice",
        ),
        (with(vec![u32::MAX], vec![]), "not in the queue"),
        (with(vec![0], vec![3]), "queue index 3"),
    ] {
        let err = read(&s, e).unwrap_err();
        assert_eq!(err.cause(), "invalid-answer", "{says}");
        assert!(err.to_string().contains(says), "{says}: {err}");
    }
    let got = read(&s, with(vec![2], vec![0])).unwrap();
    assert_eq!(got.scores, [0, 6, 0]);
    let named: Vec<i64> = got.verdicts.iter().map(|v| v.task).collect();
    assert_eq!(named, [10, 30], "named verdicts in queue order");
    let all = got.all_verdicts(&s.queue);
    assert!(matches!(all[0].verdict, p::Verdict::Reject(_)), "{all:?}");
    assert_eq!(all[1].verdict, p::Verdict::Allow(6));
    assert!(matches!(all[2].verdict, p::Verdict::Defer(_)), "{all:?}");
}
