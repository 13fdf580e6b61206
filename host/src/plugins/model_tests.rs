//! The snapshot's JSON (`nightjar plugins test --snapshot S.json`): shared
//! names read and written as plain strings, hostile text refused or kept
//! exactly; usage rows by project name in JSON, by position in memory.

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
fn a_usage_table_names_each_project_once_and_is_shared_until_one_is_added() {
    let (vision, bio): (std::sync::Arc<str>, std::sync::Arc<str>) = ("vision".into(), "bio".into());
    let mut t = UsageTable::default();
    let a = t.row(&vision, 2, 10, Some(20));
    let b = t.row(&bio, 1, 11, None);
    let c = t.row(&std::sync::Arc::from("vision"), 1, 12, None);
    assert_eq!(
        (a.project, b.project, c.project),
        (0, 1, 0),
        "by name, not allocation"
    );
    let first = t.names();
    assert!(
        std::sync::Arc::ptr_eq(&first, &t.names()),
        "unchanged: the same table"
    );
    assert_eq!(t.project(&bio), 1);
    assert!(std::sync::Arc::ptr_eq(&first, &t.names()));
    assert_eq!(t.project(&"nlp".into()), 2);
    let after = t.names();
    assert!(
        !std::sync::Arc::ptr_eq(&first, &after),
        "a name added: a new table"
    );
    assert_eq!(
        after.iter().map(|n| &**n).collect::<Vec<_>>(),
        ["vision", "bio", "nlp"]
    );
}

#[test]
fn snapshot_json_names_each_usage_rows_project_and_reads_back_the_same() {
    let json = r#"{"now": 5, "time_zone": "UTC", "utc_offset": 0, "queue": [], "running": [],
        "gpus": [], "usage": [
            {"project": "vision", "gpus": 2, "started_at": 1, "ended_at": 4},
            {"project": "bio", "gpus": 1, "started_at": 2, "ended_at": null},
            {"project": "vision", "gpus": 0, "started_at": 3, "ended_at": null}]}"#;
    let s: Snapshot = serde_json::from_str(json).unwrap();
    assert_eq!(
        s.projects.iter().map(|n| &**n).collect::<Vec<_>>(),
        ["vision", "bio"]
    );
    let names: Vec<&str> = s.usage.iter().map(|u| s.project(u)).collect();
    assert_eq!(names, ["vision", "bio", "vision"]);
    assert_eq!((s.usage[1].gpus, s.usage[1].ended_at), (1, None));
    let written = serde_json::to_value(&s).unwrap();
    assert_eq!(written["usage"][2]["project"], "vision", "{written}");
    assert!(
        written.get("projects").is_none(),
        "the table is not part of the JSON form"
    );
    let again: Snapshot = serde_json::from_value(written).unwrap();
    assert_eq!(again, s);
    // Equal as every policy sees it: the same names, whatever the table's
    // order; a row naming another project is not.
    let mut reordered = s.clone();
    reordered.projects = vec!["bio".into(), "vision".into(), "unused".into()].into();
    reordered.usage = s
        .usage
        .iter()
        .map(|u| Usage {
            project: 1 - u.project,
            ..*u
        })
        .collect();
    assert_eq!(reordered, s);
    let mut renamed = reordered.clone();
    renamed.projects = vec!["bio".into(), "nlp".into()].into();
    assert_ne!(renamed, s);
    // A row past its table (no builder writes one) reads as no project.
    let mut odd = s.clone();
    odd.usage = vec![Usage {
        project: 9,
        ..s.usage[0]
    }]
    .into();
    assert_eq!(odd.project(&odd.usage[0]), "");
}
