//! The snapshot's JSON (`nightjar plugins test --snapshot S.json`): shared
//! names read and written as plain strings, hostile text refused or kept
//! exactly; and what makes two usage rows equal.

use super::*;

fn with_names(name: &str, project: &str) -> Snapshot {
    let mut s = crate::plugins::tests::snapshot(vec![crate::plugins::tests::task(
        7,
        project,
        Priority::Normal,
        1_000,
    )]);
    s.queue[0].name = name.into();
    s.running.push(RunningTask {
        id: 8,
        name: name.into(),
        project: project.into(),
        priority: Priority::High,
        gpus: vec![0],
        started_at: 500,
        preemptible: true,
    });
    s
}

#[test]
fn shared_names_are_plain_json_strings_and_round_trip_exactly() {
    // Text a hostile task file can carry: NUL, bidi override, emoji, quotes.
    let name = "a\u{0}b\u{202e}c\u{1F600}\"d\\";
    let s = with_names(name, "p\u{0}q");
    let json = serde_json::to_string(&s).unwrap();
    let escaped = serde_json::to_string(name).unwrap();
    assert!(
        json.contains(&format!("\"name\":{escaped}")),
        "a name is a JSON string, as it was as a String: {json}"
    );
    let back: Snapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(back, s);
    assert_eq!(&*back.queue[0].name, name);
    assert_eq!(&*back.running[0].project, "p\u{0}q");
}

#[test]
fn a_snapshot_with_a_name_that_is_not_text_is_refused_naming_it() {
    let json = serde_json::to_string(&with_names("t", "p")).unwrap();
    for (bad, what) in [
        (
            json.replacen("\"name\":\"t\"", "\"name\":17", 1),
            "a number",
        ),
        (json.replacen("\"name\":\"t\"", "\"name\":null", 1), "null"),
        (
            json.replacen("\"name\":\"t\"", "\"name\":[\"t\"]", 1),
            "a list",
        ),
        // A lone surrogate is no Unicode text at all.
        (
            json.replacen("\"name\":\"t\"", "\"name\":\"\\ud800\"", 1),
            "a lone surrogate",
        ),
        (
            json.replacen("\"project\":\"p\"", "\"project\":{}", 1),
            "an object",
        ),
    ] {
        assert_ne!(bad, json, "the case {what} changed the text");
        let e = serde_json::from_str::<Snapshot>(&bad).expect_err(what);
        let msg = e.to_string();
        assert!(
            msg.contains("invalid type") || msg.contains("hex escape"),
            "{what}: {msg}"
        );
        assert!(
            msg.contains("line 1 column"),
            "{what}: the place is named: {msg}"
        );
    }
}

/// A score column read as allows: each task's named verdicts (kept in
/// their order) in its place, an allow with its score for the others; a
/// verdict out of queue order, repeated or naming no queued task changes
/// only where it stands, never what it says.
#[test]
fn a_score_column_reads_as_allows_beside_the_named_verdicts() {
    let queue: Vec<QueuedTask> = (1..=3)
        .map(|id| crate::plugins::tests::task(id, "p", Priority::Normal, 0))
        .collect();
    let defer = |task| TaskVerdict {
        task,
        verdict: Verdict::Defer(Deferral {
            reason: "later".into(),
            until: None,
        }),
    };
    let allow = |task, n| TaskVerdict {
        task,
        verdict: Verdict::Allow(n),
    };
    let mut e = Evaluation {
        verdicts: vec![defer(2)],
        scores: vec![5, 0, 7],
        ..Evaluation::default()
    };
    assert_eq!(e.all_verdicts(&queue), [allow(1, 5), defer(2), allow(3, 7)]);
    e.verdicts = vec![defer(3), defer(9), defer(2), defer(3)];
    assert_eq!(
        e.all_verdicts(&queue),
        [allow(1, 5), defer(2), defer(3), defer(3), defer(9)],
        "out of order: each task's in their order, in its place; an unknown task's last"
    );
    e.scores.clear();
    assert_eq!(e.all_verdicts(&queue), e.verdicts, "no column: as they are");
}

#[test]
fn usage_rows_are_equal_exactly_when_every_field_is_shared_project_or_not() {
    let row = |project: &str, gpus, started_at, ended_at| Usage {
        project: std::sync::Arc::from(project),
        gpus,
        started_at,
        ended_at,
    };
    let a = row("vision", 2, 10, Some(20));
    let shared = Usage {
        project: std::sync::Arc::clone(&a.project),
        ..a.clone()
    };
    assert_eq!(a, shared, "the same allocation");
    assert_eq!(a, row("vision", 2, 10, Some(20)), "the same text, apart");
    for other in [
        row("bio", 2, 10, Some(20)),
        row("vision", 1, 10, Some(20)),
        row("vision", 2, 11, Some(20)),
        row("vision", 2, 10, Some(21)),
        row("vision", 2, 10, None),
    ] {
        assert_ne!(a, other, "{other:?}");
    }
}
