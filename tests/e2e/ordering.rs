//! The start order against the scheduler thread's timing: a task held, or
//! whose dependency is queued again, while the chain evaluates does not
//! start. (The order itself, summed scores then the built-in order, is the
//! in-process tier's: `host/src/api/inproc/ordering.rs`.)

use crate::harness::Nj;

const HOSTILE: &str = env!("NIGHTJAR_TEST_PLUGIN_HOSTILE");

/// A world whose every evaluation takes three seconds (the policy loops
/// until its deadline), so the queue the scheduler read is three seconds
/// old when it starts tasks. (One second left a loaded machine too little
/// time to land the test's second command inside the pass.)
fn slow_chain() -> Nj {
    let mut nj = Nj::new(
        "slots = 2\n[plugins]\nchain = [\"hostile\"]\nevaluate_timeout = \"3s\"\nmax_failures = 100\nfailure_window = 100\n[plugin.hostile.config]\nmode = \"loop\"\n",
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
    // Past the end of the pass that read it released (and would start it).
    std::thread::sleep(std::time::Duration::from_millis(4000));
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
    let start = nj.show(after)["runs"][0]["started_at"].as_i64().unwrap();
    let dep_runs = nj.show(dep)["runs"].clone();
    let dep_end = dep_runs[0]["finished_at"].as_i64();
    assert!(
        dep_end.is_some_and(|end| start >= end),
        "`after` started at {start}, before its dependency ran (dep's runs: {dep_runs})"
    );
}
