//! Hostile members on the helper's thread (`Chain::share_work`): whichever
//! thread a member's calls run on, a simulation stops with the same error
//! naming the same policy, or plays the same schedule, as on one thread.

use super::kept_tests::{busy_trace, opts_on};
use super::*;

/// A config whose chain is `chain` (first-party names, `hostile` and
/// `hostile2`: the hostile test plugin in the modes given), with `extra`
/// under `[plugins]`; the folder holding the plugins lives as long as the
/// second value.
fn config(chain: &[(&str, &str)], extra: &str) -> (Config, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    let names: Vec<&str> = chain.iter().map(|(n, _)| *n).collect();
    for (name, mode) in chain.iter().filter(|(n, _)| n.starts_with("hostile")) {
        let wasm = dir.path().join(format!("{name}.wasm"));
        std::fs::copy(env!("NIGHTJAR_TEST_PLUGIN_HOSTILE"), wasm).unwrap();
        text.push_str(&format!("[plugin.{name}.config]\nmode = \"{mode}\"\n"));
    }
    let text = format!(
        "[plugins]\ndir = \"{}\"\nchain = {names:?}\n{extra}\n{text}",
        dir.path().display()
    );
    let mut cfg = Config::parse(&text, Path::new("/t.toml")).unwrap();
    // As `simulate` sets it: a simulated month passes in seconds.
    cfg.plugins.cpu_budget = std::time::Duration::from_secs(u32::MAX as u64);
    (cfg, dir)
}

fn opts() -> Options {
    opts_on(2)
}

/// What a simulation gave, comparably.
type Played = Result<String, String>;

fn played(o: Outcome) -> String {
    format!(
        "{:?} {:?} {} {} {}",
        o.runs, o.never, o.passes, o.chain_passes, o.preemptions
    )
}

/// Simulates `trace` under `cfg`: on one thread (`away` None), or with
/// the members in `away`'s bits on the helper's thread at every pass.
fn run(cfg: &Config, trace: &Trace, away: Option<u64>) -> (Played, u64) {
    let engine = PluginEngine::new(None).unwrap();
    let mut chain = Chain::load_here(cfg, Some(&engine));
    if away.is_some() {
        chain.share_work();
    }
    Chain::hand_away_in_tests(away);
    let r = Sim::new(cfg, &trace.jobs, opts(), Some(&mut chain))
        .refusing_failures()
        .run();
    Chain::hand_away_in_tests(None);
    (r.map(played), chain.calls_handed())
}

/// `chain` plays the same on one thread as with each split of its members.
fn same_on_either_thread(chain: &[(&str, &str)], extra: &str, trace: &Trace) -> Played {
    let (cfg, _dir) = config(chain, extra);
    let (alone, none) = run(&cfg, trace, None);
    assert_eq!(none, 0);
    let two = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    // Each member alone on the helper's thread, then all of them.
    let all = (1u64 << chain.len()) - 1;
    for mask in (0..chain.len()).map(|i| 1 << i).chain([all]) {
        let (shared, handed) = run(&cfg, trace, Some(mask));
        assert_eq!(shared, alone, "{chain:?}, members {mask:b} on the helper");
        assert!(!two || handed > 0, "{chain:?}: nothing handed");
    }
    alone
}

#[test]
fn a_hostile_member_fails_the_same_on_the_helpers_thread_as_on_the_callers() {
    let trace = busy_trace(30, 7);
    for (mode, cause) in [
        ("alloc", "policy hostile failed (memory)"),
        ("recurse", "policy hostile failed (trap)"),
        ("panic", "policy hostile failed (trap)"),
        ("unknown-gpu", "policy hostile failed (invalid-answer)"),
        ("unknown-task", "policy hostile failed (invalid-answer)"),
        ("random", "policy hostile answered the same snapshot twice"),
        ("churn", "policy hostile answered the same snapshot twice"),
        ("flaky", "policy hostile failed (trap)"),
        ("random-huge", "policy hostile failed"),
        ("tariff-flood", "policy hostile failed"),
    ] {
        let chain = [("priority", ""), ("hostile", mode)];
        let e = same_on_either_thread(&chain, "evaluate_timeout = \"30s\"", &trace).unwrap_err();
        assert!(e.starts_with(cause), "{mode}: {e}");
    }
}

#[test]
fn two_members_that_loop_at_once_on_two_threads_both_meet_their_deadline() {
    let trace = busy_trace(10, 3);
    let chain = [("hostile", "loop"), ("hostile2", "loop")];
    let e = same_on_either_thread(&chain, "evaluate_timeout = \"100ms\"", &trace).unwrap_err();
    assert!(e.starts_with("policy hostile failed (timeout)"), "{e}");
}

#[test]
fn pure_hostile_members_play_the_same_schedule_on_either_thread() {
    let trace = busy_trace(30, 11);
    for mode in ["random-bytes", "preempt-all", "tariff", "close-gpu"] {
        let chain = [("fair-share", ""), ("hostile", mode), ("priority", "")];
        let r = same_on_either_thread(&chain, "evaluate_timeout = \"30s\"", &trace);
        assert!(r.is_ok(), "{mode}: {r:?}");
    }
}

#[test]
fn a_panic_in_the_hosts_side_of_a_call_fails_the_member_whichever_thread_prepares_its_pass() {
    // Each pass's form is made on the caller's thread before a shared pass:
    // a panic there ends the member, as it does within its call.
    let trace = busy_trace(10, 5);
    let chain = [("priority", ""), ("hostile", "host-panics-in-prepare")];
    let e = same_on_either_thread(&chain, "", &trace).unwrap_err();
    assert!(
        e.starts_with("policy hostile failed (trap): trapped: the host panicked in its call"),
        "{e}"
    );
}
