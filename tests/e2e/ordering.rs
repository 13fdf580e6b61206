//! The start order with a chain: summed scores first, and the built-in order
//! (priority class, then age) for equal scores, so a chain whose scorer
//! fails, is disabled or scores nothing still starts urgent work first.

use crate::harness::Nj;

const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");

fn started_at(nj: &Nj, id: i64) -> i64 {
    nj.show(id)["runs"][0]["started_at"].as_i64().unwrap()
}

/// A one-slot world whose chain is the hostile plugin in `mode` (open).
fn world(mode: &str) -> Nj {
    let nj = Nj::new(&format!(
        "slots = 1\n[plugins]\nchain = [\"hostile\"]\nmax_failures = 1\nfailure_window = 1\n[plugin.hostile.config]\nmode = \"{mode}\"\n"
    ));
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(HOSTILE, dir.join("hostile.wasm")).unwrap();
    nj
}

fn assert_built_in_order(mode: &str) {
    let mut nj = world(mode);
    nj.start();
    let blocker = nj.submit(&["--", "sleep", "1"]);
    nj.until("the blocker runs", || {
        nj.show(blocker)["task"]["state"] == "running"
    });
    let low = nj.submit(&["--priority", "low", "--", "true"]);
    let normal = nj.submit(&["--", "true"]);
    let urgent = nj.submit(&["--priority", "urgent", "--", "true"]);
    for id in [blocker, low, normal, urgent] {
        assert_eq!(nj.wait(id), 0, "{mode}");
    }
    let (l, n, u) = (
        started_at(&nj, low),
        started_at(&nj, normal),
        started_at(&nj, urgent),
    );
    assert!(
        u <= n && n <= l,
        "{mode}: urgent ({u}) before normal ({n}) before low ({l})"
    );
}

#[test]
fn a_chain_that_scores_nothing_keeps_the_built_in_order() {
    assert_built_in_order("ok");
}

#[test]
fn a_failing_disabled_scorer_falls_back_to_the_built_in_order() {
    assert_built_in_order("panic");
}

/// A world whose every evaluation takes a second (the policy loops until
/// its deadline), so the queue the scheduler read is a second old when it
/// starts tasks.
fn slow_chain() -> Nj {
    let mut nj = Nj::new(
        "slots = 2\n[plugins]\nchain = [\"hostile\"]\nevaluate_timeout = \"1s\"\nmax_failures = 100\nfailure_window = 100\n[plugin.hostile.config]\nmode = \"loop\"\n",
    );
    let dir = nj.state.join("plugins");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(HOSTILE, dir.join("hostile.wasm")).unwrap();
    nj.start();
    nj
}

#[test]
fn a_task_held_while_the_chain_evaluates_does_not_start() {
    let nj = slow_chain();
    let id = nj.submit(&["--hold", "--", "true"]);
    // Released: a pass reads it, and while the chain evaluates it is held again.
    nj.ok(&["release", &id.to_string()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    nj.ok(&["hold", &id.to_string()]);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let t = nj.show(id);
    assert_eq!(t["task"]["state"], "held", "{t}");
    assert_eq!(t["runs"].as_array().map(Vec::len), Some(0), "{t}");
}

#[test]
fn a_task_whose_dependency_is_queued_again_while_the_chain_evaluates_does_not_start() {
    let nj = slow_chain();
    let dep = nj.submit(&["--hold", "--name", "dep", "--", "sleep", "1"]);
    let after = nj.submit(&["--after-any", &dep.to_string(), "--", "true"]);
    // Cancelled, `dep` has ended: `after` may start, and a pass reads it...
    nj.ok(&["cancel", &dep.to_string()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    // ...but before the chain answers, `dep` is queued again: `after` waits for it.
    nj.ok(&["retry", &dep.to_string()]);
    assert_eq!(nj.wait(after), 0);
    let start = started_at(&nj, after);
    let dep_runs = nj.show(dep)["runs"].clone();
    let dep_end = dep_runs[0]["finished_at"].as_i64();
    assert!(
        dep_end.is_some_and(|end| start >= end),
        "`after` started at {start}, before its dependency ran (dep's runs: {dep_runs})"
    );
}
