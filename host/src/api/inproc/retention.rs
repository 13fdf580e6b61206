//! Retention on the given clock: the store's file stops growing once old
//! work is collected, round after round (its freed pages are used again).
//! (That `gc` removes run folders, outputs and scratch of real runs, and
//! the hourly collection's thread, are the end-to-end tier's:
//! `tests/e2e/retention.rs`, `tests/waits/retention_timer.rs`.)

use super::World;
use crate::api::Gc;
use crate::store::RunClass;

/// The store's file and its write-ahead log, in bytes.
fn db_size(w: &World) -> u64 {
    let db = w.fx.daemon.cfg.db_path();
    let wal = db.with_extension("db-wal");
    [db, wal]
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// Submits a sweep of `n` members named `name` and runs each to success
/// through the chain's passes, until a pass starts nothing more.
fn run_sweep(w: &World, name: &str, n: usize) {
    let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    w.submit(&format!(
        "name = \"{name}\"\ncommand = \"true ${{i}}\"\n[sweep]\ni = [{}]\n",
        values.join(", ")
    ));
    let mut seen = w.handed().len();
    loop {
        w.pass();
        let handed = w.handed();
        if handed.len() == seen {
            return;
        }
        w.advance(100);
        for (run, _, _) in &handed[seen..] {
            assert!(w.fx.end(*run, RunClass::Ok, 0), "run {run}'s end");
        }
        seen = handed.len();
    }
}

#[test]
fn the_database_stops_growing_once_old_work_is_collected() {
    let w = World::new(
        "slots = 50\n[plugins]\nchain = [\"priority\", \"fair-share\", \"thermal\"]\n\
         [retention]\nended = \"1s\"\nfailed = \"1s\"\nevery = \"0s\"\n",
    );
    let mut sizes = Vec::new();
    for round in 0..3 {
        let before = w.handed().len();
        run_sweep(&w, &format!("round{round}"), 300);
        assert_eq!(w.handed().len(), before + 300, "each member ran once");
        // Old enough on the daemon's clock, not the wall's.
        let young = w.call(Gc { dry_run: false }).expect("gc");
        assert_eq!(young.tasks, 0, "nothing is a second old yet: {young:?}");
        w.advance(1_200);
        let r = w.call(Gc { dry_run: false }).expect("gc");
        assert_eq!(r.tasks, 301, "300 members and their sweep: {r:?}");
        sizes.push(db_size(&w));
    }
    assert!(
        sizes[2] <= sizes[0] + (sizes[0] / 5).max(256 << 10),
        "the third round reuses the pages of the first: {sizes:?}"
    );
}
