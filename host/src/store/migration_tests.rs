//! Upgrading a database written by the previous release: the fixture
//! `tests/fixtures/nightjar-0.1-schema3.db` was written by nightjar 0.1
//! (schema 3) with a succeeded GPU task, a failed task, a sweep of three, a
//! recurring template, a blocked dependant, a cancelled, a running and a
//! held task.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::*;

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/nightjar-0.1-schema3.db");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nightjar.db");
    std::fs::copy(&src, &db).unwrap();
    (dir, db)
}

const TABLES: &[&str] = &[
    "tasks",
    "runs",
    "events",
    "deps",
    "policy_verdicts",
    "run_gpus",
    "run_gpu_series",
];

/// The columns of each table in [`TABLES`].
fn columns(db: &Path) -> Vec<Vec<String>> {
    let c = Connection::open(db).unwrap();
    TABLES
        .iter()
        .map(|t| {
            let stmt = c.prepare(&format!("SELECT * FROM {t} LIMIT 0")).unwrap();
            stmt.column_names().into_iter().map(String::from).collect()
        })
        .collect()
}

/// Every row of every table as text, in `cols` (per table: later schemas
/// add columns, which hold nothing of the old rows), with the one renamed
/// word mapped.
fn dump(db: &Path, cols: &[Vec<String>]) -> Vec<(String, Vec<String>)> {
    let c = Connection::open(db).unwrap();
    TABLES
        .iter()
        .zip(cols)
        .map(|(t, cols)| {
            let mut stmt = c
                .prepare(&format!(
                    "SELECT {} FROM {t} ORDER BY rowid",
                    cols.join(", ")
                ))
                .unwrap();
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |r| {
                    let cells: Vec<String> = (0..n)
                        .map(|i| match r.get_ref(i).unwrap() {
                            rusqlite::types::ValueRef::Null => "NULL".into(),
                            rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                            rusqlite::types::ValueRef::Real(v) => v.to_string(),
                            rusqlite::types::ValueRef::Text(v) => String::from_utf8_lossy(v).into(),
                            rusqlite::types::ValueRef::Blob(v) => format!("{v:?}"),
                        })
                        .map(|v| if v == "array" { "sweep".into() } else { v })
                        .collect();
                    Ok(cells.join("|"))
                })
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            (t.to_string(), rows)
        })
        .collect()
}

#[test]
fn a_release_0_1_database_upgrades_without_losing_a_row() {
    let (_dir, db) = fixture();
    let cols = columns(&db);
    let before = dump(&db, &cols);
    assert_eq!(
        Connection::open(&db)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .unwrap(),
        3,
        "the fixture is schema 3"
    );
    assert!(
        before.iter().all(|(_, rows)| !rows.is_empty()),
        "every table has rows to lose"
    );
    let store = Store::open(&db).unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        schema::MIGRATIONS.len() as i64
    );
    drop(store);
    assert_eq!(
        dump(&db, &cols),
        before,
        "every row of every table is kept, `array` now `sweep`"
    );
}

#[test]
fn the_upgraded_sweep_reads_as_a_sweep_with_its_members() {
    let (_dir, db) = fixture();
    let store = Store::open(&db).unwrap();
    let rows = store
        .list(
            &ListFilter {
                all: true,
                ..ListFilter::default()
            },
            None,
        )
        .unwrap();
    let sweep = rows.iter().find(|r| r.name == "lr").expect("the sweep");
    assert_eq!(
        (sweep.kind.as_str(), sweep.state),
        ("sweep", TaskState::Sweep)
    );
    let counts = sweep.counts.as_ref().expect("counts");
    assert_eq!((counts.total, counts.succeeded), (3, 3));
    let detail = store.show(sweep.id).unwrap();
    assert_eq!(detail.members.len(), 3);
    // The GPU task keeps its run and GPU record; the failed one its exit code.
    let gpu = store.show(1).unwrap();
    assert_eq!(gpu.gpu_records.len(), 1);
    assert_eq!(store.show(2).unwrap().runs[0].exit_code, Some(3));
    // Held stays held, blocked stays blocked, the template keeps its firing.
    let state = |name: &str| rows.iter().find(|r| r.name == name).map(|r| r.state);
    assert_eq!(state("held-one"), Some(TaskState::Held));
    assert_eq!(state("after"), Some(TaskState::Blocked));
    assert!(
        rows.iter()
            .any(|r| r.name == "nightly" && r.next_fire_at.is_some())
    );
}

#[test]
fn an_upgraded_database_keeps_its_references_checked_and_reopens_as_is() {
    let (_dir, db) = fixture();
    drop(Store::open(&db).unwrap());
    let c = Connection::open(&db).unwrap();
    let dangling: i64 = c
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(dangling, 0);
    // A member's parent reference points at the rebuilt table.
    let parent_kind: String = c
        .query_row(
            "SELECT p.kind FROM tasks m JOIN tasks p ON p.id = m.parent_id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(parent_kind, "sweep");
    drop(c);
    let cols = columns(&db);
    let before = dump(&db, &cols);
    let store = Store::open(&db).unwrap();
    // Foreign keys are on again for the store's own work.
    let on: i64 = store
        .conn
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(on, 1);
    drop(store);
    assert_eq!(dump(&db, &cols), before, "a second open changes nothing");
}

/// Every table, index and trigger, by name, with its SQL.
fn schema_of(db: &Path) -> Vec<(String, String)> {
    let c = Connection::open(db).unwrap();
    let mut stmt = c
        .prepare("SELECT name, COALESCE(sql, '') FROM sqlite_master ORDER BY name")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// The upgrade ends where a new database starts: the same tables and
/// indexes, each with the same SQL (the queue's covering index of schema
/// 17 included, which a pass's plan depends on: `candidates.rs`).
#[test]
fn an_upgraded_database_has_the_schema_a_new_one_has() {
    let (_dir, db) = fixture();
    drop(Store::open(&db).unwrap());
    let new_dir = tempfile::tempdir().unwrap();
    let new = new_dir.path().join("nightjar.db");
    drop(Store::open(&new).unwrap());
    let upgraded = schema_of(&db);
    assert_eq!(upgraded, schema_of(&new));
    let queue = upgraded.iter().find(|(n, _)| n == "tasks_queue");
    assert!(
        queue.is_some_and(|(_, sql)| sql.contains("length(CAST(spec AS BLOB))")),
        "{queue:?}"
    );
}
