//! The policy chain in a daemon: the built-in priority policy's weights, a
//! plugin's deferral and its reason, failures recorded with their cause,
//! `on_failure` open and closed, and `why` with every policy's verdict.
//! (Loading, uploading and the offline `plugins check` / `plugins test`
//! are the end-to-end tier's: `tests/e2e/policies.rs`.)

use super::{HOSTILE, World};
use crate::api::wire::TaskState;
use crate::api::{PluginList, Why};
use crate::store::RunClass;

/// A one-slot daemon whose plugin folder holds the hostile test plugin.
fn world(config: &str) -> World {
    World::with_plugins(&[("hostile", HOSTILE)], &format!("slots = 1\n{config}"))
}

/// The chain's first member as `plugins ls` shows it: (state, failures,
/// last error).
fn first_member(w: &World) -> (String, u32, String) {
    let members = w.call(PluginList::default()).unwrap();
    let m = members.first().expect("a member");
    (
        m.state.clone(),
        m.failures,
        m.last_error.clone().unwrap_or_default(),
    )
}

/// Runs the one slot's task to its end and makes the next pass.
fn finish(w: &World, id: i64) {
    w.advance(1_000);
    w.end(id, RunClass::Ok, 0);
    w.pass();
}

#[test]
fn the_built_in_priority_policy_orders_by_its_configured_weights() {
    // Weights turned upside down, so the order can only come from the plugin.
    let w = world(
        "[plugins]\nchain = [\"priority\"]\n[plugin.priority.config]\nweights = { low = 1000, normal = 10, high = 0, urgent = 0 }\n",
    );
    let blocker = w.task("blocker", &["sleep", "1"], "");
    w.pass();
    assert_eq!(w.state(blocker), TaskState::Running);
    let urgent = w.task("urgent", &["true"], "priority = \"urgent\"");
    let normal = w.task("normal", &["true"], "");
    let low = w.task("low", &["true"], "priority = \"low\"");
    let mut order = Vec::new();
    let mut running = blocker;
    for _ in 0..3 {
        finish(&w, running);
        running = [urgent, normal, low]
            .into_iter()
            .find(|&t| w.state(t) == TaskState::Running)
            .expect("one starts after each end");
        order.push(running);
    }
    assert_eq!(order, [low, normal, urgent], "low, normal, then urgent");
    let members = w.call(PluginList::default()).unwrap();
    assert_eq!(
        (members[0].name.as_str(), members[0].source.as_str()),
        ("priority", "built-in"),
        "{members:?}"
    );
    assert_eq!(members[0].state, "ok");
}

#[test]
fn a_deferral_keeps_the_task_waiting_with_the_policys_reason() {
    let w = world("[plugins]\nchain = [\"hostile\"]\n");
    let held = w.task("held", &["true"], "project = \"held-by-plugin\"");
    let free = w.task("free", &["true"], "");
    w.pass();
    assert_eq!(w.state(free), TaskState::Running);
    finish(&w, free);
    assert_eq!(w.state(held), TaskState::Queued);
    assert_eq!(
        w.reason(held),
        "deferred by hostile: held by the hostile test plugin"
    );
    let listed = w.call(crate::api::TaskList::default()).unwrap();
    let row = listed.iter().find(|t| t.id == held).expect("listed");
    assert_eq!(
        row.reason.as_deref(),
        Some("deferred by hostile: held by the hostile test plugin"),
        "ls shows the reason too"
    );
}

/// A daemon whose only policy is the hostile plugin in `mode`, failing
/// open; one task is submitted and a pass made: whether it started.
fn open_world(mode: &str, more: &str) -> (World, i64) {
    let w = world(&format!(
        "[plugins]\nchain = [\"hostile\"]\nevaluate_timeout = \"1s\"\n{more}\n[plugin.hostile]\non_failure = \"open\"\n[plugin.hostile.config]\nmode = \"{mode}\"\n"
    ));
    let id = w.task("t", &["true"], "");
    w.pass();
    (w, id)
}

#[test]
fn a_looping_policy_times_out_is_disabled_and_open_keeps_scheduling() {
    let (w, a) = open_world("loop", "max_failures = 2");
    let b = w.task("b", &["true"], "");
    assert_eq!(
        w.state(a),
        TaskState::Running,
        "open: the failing plugin is ignored"
    );
    finish(&w, a);
    assert_eq!(w.state(b), TaskState::Running);
    let (state, _, err) = first_member(&w);
    assert_eq!(state, "disabled");
    assert!(err.contains("timed out"), "{err}");
}

#[test]
fn a_panicking_policy_with_on_failure_closed_starts_nothing() {
    let w = world(
        "[plugins]\nchain = [\"hostile\"]\n[plugin.hostile]\non_failure = \"closed\"\n[plugin.hostile.config]\nmode = \"panic\"\n",
    );
    let id = w.task("t", &["true"], "");
    w.pass();
    w.pass();
    let (_, failures, err) = first_member(&w);
    assert!(failures >= 1, "the plugin failed");
    assert!(err.contains("trap"), "{err}");
    assert_eq!(
        w.state(id),
        TaskState::Queued,
        "closed: nothing starts while it fails"
    );
    assert!(w.handed().is_empty(), "{:?}", w.handed());
}

/// Every hostile behaviour: the cause is recorded against the plugin, and
/// with `on_failure = "open"` the daemon keeps scheduling. (`hang-config`,
/// a plugin whose configure never returns, is the end-to-end tier's: it is
/// the daemon's start that it holds up.)
#[test]
fn every_hostile_plugin_is_recorded_with_its_cause_and_open_keeps_scheduling() {
    let cases = [
        ("loop", "timed out"),
        ("alloc", "memory limit"),
        ("recurse", "trap"),
        ("panic", "trap"),
        ("huge", "memory limit"),
        ("unknown-task", "not in the queue"),
        ("unknown-gpu", "exist"),
    ];
    for (mode, cause) in cases {
        let (w, id) = open_world(mode, "");
        assert_eq!(
            w.state(id),
            TaskState::Running,
            "{mode}: open keeps scheduling"
        );
        let (_, _, err) = first_member(&w);
        assert!(err.contains(cause), "{mode}: expected `{cause}` in `{err}`");
    }
}

#[test]
fn why_explains_a_deferral_a_dependency_and_a_start_with_its_score() {
    let w = world("[plugins]\nchain = [\"priority\", \"hostile\"]\n");
    let held = w.task("held", &["true"], "project = \"held-by-plugin\"");
    let ran = w.task("ran", &["true"], "priority = \"high\"");
    let waits = w.task("waits", &["true"], &format!("after = [{held}]"));
    w.pass();
    assert_eq!(w.state(ran), TaskState::Running);
    let why = w.call(Why { id: held }).unwrap();
    assert_eq!(
        why.reason.as_deref(),
        Some("deferred by hostile: held by the hostile test plugin"),
        "{why:?}"
    );
    let verdicts: Vec<(&str, &str, &str)> = why
        .verdicts
        .iter()
        .map(|v| (v.plugin.as_str(), v.verdict.as_str(), v.reason.as_str()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("priority", "allow", "score 100"),
            ("hostile", "defer", "held by the hostile test plugin"),
        ],
        "every policy's verdict, in chain order"
    );
    let why = w.call(Why { id: ran }).unwrap();
    let because = why.run.map(|r| r.because).unwrap_or_default();
    assert!(because.contains("score 200 = priority 200"), "{because}");
    let why = w.call(Why { id: waits }).unwrap();
    assert_eq!(
        why.waiting_for.iter().map(|d| d.id).collect::<Vec<_>>(),
        [held],
        "{why:?}"
    );
}
