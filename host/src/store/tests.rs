use std::path::Path;

use super::*;
use crate::task::file::{Format, parse};
use crate::task::resolve::resolve;

/// A store on a fresh temporary file.
pub(super) fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("nj.db")).unwrap();
    (dir, s)
}

/// Submits a task file (TOML) at t = 1 s.
pub(super) fn submit(s: &mut Store, toml: &str) -> Vec<i64> {
    let entries = resolve(
        &parse(toml, Format::Toml).unwrap(),
        &std::env::temp_dir(),
        "t",
    )
    .unwrap();
    s.submit(&entries, 1_000, |_| Some(5_000)).unwrap()
}

/// A run's end: `class`, exit `code`, at `at` (the daemon's in-process tests use it too).
pub(crate) fn outcome(class: RunClass, code: i32, at: i64) -> RunOutcome {
    RunOutcome {
        class,
        exit_code: Some(code),
        signal: None,
        finished_at: at,
        message: None,
    }
}

#[test]
fn newer_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nj.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("CREATE TABLE keep (x); PRAGMA user_version = 99;")
            .unwrap();
    }
    let err = Store::open(&db).err().unwrap().to_string();
    assert!(err.contains("schema version 99"), "{err}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 99);
    let tables: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'tasks'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 0, "nothing migrated into a newer database");
}

#[test]
fn a_task_is_claimed_once_only() {
    let (dir, mut s) = store();
    let ids = submit(&mut s, "command = \"true\"\n");
    let first = s
        .claim(ids[0], &NewRun::default(), dir.path(), 2_000)
        .unwrap();
    let second = s
        .claim(ids[0], &NewRun::default(), dir.path(), 2_001)
        .unwrap();
    assert!(first.is_some());
    assert!(second.is_none(), "second claim of the same task must fail");
    assert_eq!(s.show(ids[0]).unwrap().runs.len(), 1);
}

#[test]
fn a_claim_checks_again_what_the_scheduler_read_before_asking_the_policies() {
    // `b` starts after `a` ends, whatever the outcome. The scheduler reads
    // the queue (b may start: a was cancelled), the policies take their
    // time, and meanwhile `retry a` queues a again: b must wait for it.
    let (dir, mut s) = store();
    let ids = submit(
        &mut s,
        "[[task]]\nname = \"a\"\ncommand = \"true\"\nhold = true\n\
         [[task]]\nname = \"b\"\ncommand = \"true\"\nafter_any = [\"a\"]\n",
    );
    let (a, b) = (ids[0], ids[1]);
    s.cancel(a, 1_500).unwrap();
    let read: Vec<i64> = s
        .candidates(2_000, 10, 0)
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(read, vec![b], "a cancelled: b may start");
    s.retry(a, 2_100, false).unwrap();
    assert!(
        s.claim(b, &NewRun::default(), dir.path(), 2_200)
            .unwrap()
            .is_none(),
        "b started while its dependency was queued again"
    );
    assert_eq!(s.task(b).unwrap().state, TaskState::Queued);
    assert!(s.show(b).unwrap().runs.is_empty());
    // Nor does a claim start a task before its retry backoff.
    let c = submit(&mut s, "command = \"true\"\n")[0];
    s.conn
        .execute("UPDATE tasks SET not_before = 9000 WHERE id = ?1", [c])
        .unwrap();
    assert!(
        s.claim(c, &NewRun::default(), dir.path(), 8_999)
            .unwrap()
            .is_none()
    );
    assert!(
        s.claim(c, &NewRun::default(), dir.path(), 9_000)
            .unwrap()
            .is_some()
    );
}

#[test]
fn order_is_priority_then_submit_time() {
    let (_dir, mut s) = store();
    let low = submit(&mut s, "command = \"true\"\npriority = \"low\"\n")[0];
    let normal = submit(&mut s, "command = \"true\"\n")[0];
    let urgent = submit(&mut s, "command = \"true\"\npriority = \"urgent\"\n")[0];
    let normal2 = submit(&mut s, "command = \"true\"\n")[0];
    let order: Vec<i64> = s
        .candidates(2_000, 10, 0)
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(order, vec![urgent, normal, normal2, low]);
}

#[test]
fn failure_retries_with_backoff_then_fails_and_blocks_dependants() {
    let (dir, mut s) = store();
    let ids = submit(
        &mut s,
        "[[task]]\nname = \"a\"\ncommand = \"false\"\n[task.retry]\nmax_attempts = 2\nbackoff = \"10s\"\non = [\"app-error\"]\n\
         [[task]]\nname = \"b\"\ncommand = \"true\"\nafter = [\"a\"]\n\
         [[task]]\nname = \"c\"\ncommand = \"true\"\nafter = [\"b\"]\n",
    );
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    assert_eq!(
        s.candidates(2_000, 10, 0).unwrap().len(),
        1,
        "b and c wait on a"
    );
    let run = s
        .claim(a, &NewRun::default(), dir.path(), 2_000)
        .unwrap()
        .unwrap();
    let f = s
        .finish_run(run.id, &outcome(RunClass::AppError, 3, 3_000))
        .unwrap()
        .unwrap();
    assert_eq!(f.state, TaskState::Queued);
    assert!(
        s.candidates(3_000, 10, 0).unwrap().is_empty(),
        "backoff holds the retry"
    );
    assert_eq!(s.next_wakeup(3_000).unwrap(), Some(13_000));
    assert_eq!(
        s.next_wakeup(13_000).unwrap(),
        None,
        "an ended backoff is no timer: the task waits for a slot"
    );
    let run2 = s
        .claim(a, &NewRun::default(), dir.path(), 13_000)
        .unwrap()
        .unwrap();
    assert_eq!(run2.attempt, 2);
    let f = s
        .finish_run(run2.id, &outcome(RunClass::AppError, 3, 14_000))
        .unwrap()
        .unwrap();
    assert_eq!(f.state, TaskState::Failed);
    assert_eq!(s.task(b).unwrap().state, TaskState::Blocked);
    assert_eq!(s.task(c).unwrap().state, TaskState::Blocked);
    assert!(
        s.task(b)
            .unwrap()
            .reason
            .unwrap()
            .contains(&format!("dependency {a}"))
    );
    // Retrying a unblocks b and c.
    s.retry(a, 15_000, false).unwrap();
    assert_eq!(s.task(b).unwrap().state, TaskState::Queued);
    assert_eq!(s.task(c).unwrap().state, TaskState::Queued);
}

#[test]
fn after_any_runs_after_a_failure() {
    let (dir, mut s) = store();
    let ids = submit(
        &mut s,
        "[[task]]\nname = \"a\"\ncommand = \"false\"\n[[task]]\nname = \"cleanup\"\ncommand = \"true\"\nafter_any = [\"a\"]\n",
    );
    let run = s
        .claim(ids[0], &NewRun::default(), dir.path(), 2_000)
        .unwrap()
        .unwrap();
    s.finish_run(run.id, &outcome(RunClass::AppError, 1, 3_000))
        .unwrap();
    let ready: Vec<i64> = s
        .candidates(3_000, 10, 0)
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ready, vec![ids[1]]);
}

#[test]
fn unknown_existing_dependency_changes_nothing() {
    let (_dir, mut s) = store();
    let entries = resolve(
        &parse("command = \"true\"\nafter = [4242]\n", Format::Toml).unwrap(),
        Path::new("/tmp"),
        "t",
    )
    .unwrap();
    let err = s.submit(&entries, 1, |_| None).unwrap_err().to_string();
    assert!(err.contains("4242"), "{err}");
    assert!(
        s.list(
            &ListFilter {
                all: true,
                ..Default::default()
            },
            None
        )
        .unwrap()
        .is_empty()
    );
}

#[test]
fn a_sweep_is_one_line_with_member_counts_and_cancel_reaches_members() {
    let (dir, mut s) = store();
    let ids = submit(&mut s, "command = \"echo ${x}\"\n[sweep]\nx = [1, 2, 3]\n");
    let rows = s
        .list(
            &ListFilter {
                all: true,
                ..Default::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(rows.len(), 1, "members fold into the sweep line");
    assert_eq!(rows[0].counts.as_ref().unwrap().total, 3);
    let members = s.show(ids[0]).unwrap().members;
    let run = s
        .claim(members[0].id, &NewRun::default(), dir.path(), 2_000)
        .unwrap()
        .unwrap();
    s.set_run_started(run.id, 4242, None).unwrap();
    let effect = s.cancel(ids[0], 3_000).unwrap();
    assert_eq!(effect.cancelled.len(), 2);
    assert_eq!(effect.to_signal, vec![(run.id, Some(4242))]);
    let c = s.counts(ids[0]).unwrap();
    assert_eq!((c.cancelled, c.running), (2, 1));
}

#[test]
fn a_state_filter_finds_sweep_members_in_that_state() {
    let (_dir, mut s) = store();
    let ids = submit(&mut s, "command = \"echo ${x}\"\n[sweep]\nx = [1, 2, 3]\n");
    let members = s.show(ids[0]).unwrap().members;
    s.hold(members[1].id, 2_000).unwrap();
    let held = s
        .list(
            &ListFilter {
                state: Some(TaskState::Held),
                all: true,
                ..Default::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(
        held.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![members[1].id]
    );
}

#[test]
fn a_cancelled_recurring_template_has_no_next_firing() {
    let (_dir, mut s) = store();
    let ids = submit(&mut s, "command = \"true\"\nschedule = \"daily@03:00\"\n");
    assert!(s.task(ids[0]).unwrap().next_fire_at.is_some());
    s.cancel(ids[0], 2_000).unwrap();
    let t = s.task(ids[0]).unwrap();
    assert_eq!(t.state, TaskState::Cancelled);
    assert_eq!(t.next_fire_at, None);
}

#[test]
fn recurring_template_fires_an_instance_and_advances() {
    let (_dir, mut s) = store();
    let ids = submit(&mut s, "command = \"true\"\nschedule = \"daily@03:00\"\n");
    assert_eq!(s.task(ids[0]).unwrap().state, TaskState::Scheduled);
    assert!(s.fire_due(4_000, |_, _| Some(9_000)).unwrap().is_empty());
    let created = s.fire_due(5_000, |_, _| Some(9_000)).unwrap();
    assert_eq!(created.len(), 1);
    assert_eq!(s.task(ids[0]).unwrap().next_fire_at, Some(9_000));
    assert_eq!(s.task(created[0]).unwrap().parent_id, Some(ids[0]));
}

#[test]
fn held_tasks_do_not_start_until_released() {
    let (_dir, mut s) = store();
    let id = submit(&mut s, "command = \"true\"\n")[0];
    s.hold(id, 2).unwrap();
    assert!(s.candidates(3, 10, 0).unwrap().is_empty());
    assert!(s.hold(id, 3).is_err(), "holding a held task is an error");
    s.release(id, 4).unwrap();
    assert_eq!(s.candidates(5, 10, 0).unwrap().len(), 1);
}

#[test]
fn a_row_that_cannot_be_read_is_named_by_table_and_row_not_a_bare_conversion_error() {
    let (_dir, mut s) = store();
    let ids = submit(&mut s, "command = \"true\"\n");
    s.conn
        .execute(
            "UPDATE tasks SET name = CAST(x'ff00fe' AS TEXT) WHERE id = ?1",
            [ids[0]],
        )
        .unwrap();
    let e = s
        .list(&ListFilter::default(), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("table tasks, row id {}", ids[0])) && e.contains("daemon check"),
        "{e}"
    );
    let problems = s.check(integrity::Depth::Quick).unwrap();
    assert_eq!(
        problems,
        vec![format!(
            "table tasks, row id {}: column name is not UTF-8 text",
            ids[0]
        )]
    );
}
