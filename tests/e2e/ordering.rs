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
