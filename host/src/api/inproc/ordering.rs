//! The start order with a chain: summed scores first, and the built-in
//! order (priority class, then age) for equal scores, so a chain whose
//! scorer fails, is disabled or scores nothing still starts urgent work
//! first. (The races of a chain that evaluates while a task is held or its
//! dependency queued again are the end-to-end tier's: `tests/e2e/ordering.rs`.)

use super::{HOSTILE, World};
use crate::api::PluginList;
use crate::api::wire::TaskState;
use crate::store::RunClass;

/// A one-slot daemon whose chain is the hostile plugin in `mode`.
fn world(mode: &str) -> World {
    World::with_plugins(
        &[("hostile", HOSTILE)],
        &format!(
            "slots = 1\n[plugins]\nchain = [\"hostile\"]\nmax_failures = 1\nfailure_window = 1\n[plugin.hostile.config]\nmode = \"{mode}\"\n"
        ),
    )
}

/// Submits low, normal and urgent work behind a running blocker, then ends
/// each run in turn: the order they were handed to the executor.
fn start_order(mode: &str) -> Vec<String> {
    let w = world(mode);
    let blocker = w.task("blocker", &["sleep", "1"], "");
    w.pass();
    assert_eq!(w.state(blocker), TaskState::Running, "{mode}");
    w.advance(1_000);
    let low = w.task("low", &["echo", "low"], "priority = \"low\"");
    w.advance(1_000);
    let normal = w.task("normal", &["echo", "normal"], "");
    w.advance(1_000);
    let urgent = w.task("urgent", &["echo", "urgent"], "priority = \"urgent\"");
    let by_argv = |argv: &str| match argv {
        "echo low" => low,
        "echo normal" => normal,
        "echo urgent" => urgent,
        other => panic!("{mode}: launched {other}"),
    };
    let mut running = blocker;
    for _ in 0..3 {
        // Past the chain's batching window, so each pass asks it again.
        w.advance(60_000);
        w.end(running, RunClass::Ok, 0);
        w.pass();
        let handed = w.handed();
        running = by_argv(&handed.last().expect("a launch").1);
    }
    // The chain was asked: the scorer is as its mode makes it.
    let member = &w.call(PluginList::default()).unwrap()[0];
    let want = if mode == "panic" { "disabled" } else { "ok" };
    assert_eq!(member.state, want, "{mode}: {member:?}");
    if mode == "panic" {
        assert!(member.failures >= 1, "{member:?}");
    }
    w.handed()[1..].iter().map(|h| h.1.clone()).collect()
}

#[test]
fn a_chain_that_scores_nothing_keeps_the_built_in_order() {
    assert_eq!(
        start_order("ok"),
        ["echo urgent", "echo normal", "echo low"]
    );
}

#[test]
fn a_failing_disabled_scorer_falls_back_to_the_built_in_order() {
    assert_eq!(
        start_order("panic"),
        ["echo urgent", "echo normal", "echo low"]
    );
}
