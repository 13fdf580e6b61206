//! The store's queries held to their indexes: what a pass and a cache
//! lookup run must not scan a table, or their cost grows with it.

use super::tests::{store, submit};

/// A result-cache lookup finds earlier runs through its partial index (the
/// estimate's query is held to its index in `estimate.rs`).
#[test]
fn a_cache_lookup_reads_its_index_not_every_run() {
    let (_dir, s) = store();
    let sql = super::cache::SOURCES_SQL
        .replace("?1", "'k'")
        .replace("?2", "8");
    let mut stmt = s
        .conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap();
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(3))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(rows.iter().any(|r| r.contains("runs_cache")), "{rows:?}");
    assert!(rows.iter().all(|r| !r.starts_with("SCAN")), "{rows:?}");
}

/// The queries every pass runs must not scan the task table, or submit
/// latency grows with the queue.
#[test]
fn per_pass_queries_use_indexes_not_scans() {
    let (_dir, mut s) = store();
    // With rows in the table the planner's choice differs from an empty one.
    for _ in 0..50 {
        submit(&mut s, "command = \"true\"\n");
    }
    for sql in [
        super::queue::DUE_SQL,
        super::queue::DUE_ANY_SQL,
        super::queue::WAKEUP_SQL,
    ] {
        let explain = format!("EXPLAIN QUERY PLAN {sql}");
        let mut stmt = s.conn.prepare(&explain).unwrap();
        let rows: Vec<String> = stmt
            .query_map([0i64], |r| r.get::<_, String>(3))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert!(
            rows.iter().all(|r| !r.starts_with("SCAN tasks")),
            "{sql}: {rows:?}"
        );
        assert!(
            rows.iter()
                .any(|r| r.contains("USING INDEX") || r.contains("USING COVERING INDEX")),
            "{rows:?}"
        );
    }
}
