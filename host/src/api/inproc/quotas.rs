//! `[quotas]`: a user's running tasks and GPUs are limited at dispatch with
//! a reason naming the key, and their waiting tasks at submit and retry.

use super::World;
use crate::api::wire::TaskState;
use crate::api::{Cancel, ErrorKind, Retry, TaskList, Why};
use crate::store::RunClass;

#[test]
fn a_user_at_their_running_quota_waits_with_the_key_named_and_starts_when_one_ends() {
    let w = World::new("slots = 4\n[quotas]\nrunning = 1\n");
    let first = w.task("first", &["sleep", "1"], "");
    w.pass();
    assert_eq!(w.state(first), TaskState::Running);
    let second = w.task("second", &["true"], "");
    w.pass();
    let want = format!(
        "quota: {} has 1 task(s) running; `quotas.running` allows 1",
        w.me.name
    );
    assert_eq!(
        (w.state(second), w.reason(second)),
        (TaskState::Queued, want.clone())
    );
    let why = w.call(Why { id: second }).unwrap();
    assert_eq!(why.reason.as_deref(), Some(want.as_str()), "{why:?}");
    w.advance(1_000);
    w.end(first, RunClass::Ok, 0);
    w.pass();
    assert_eq!(
        w.state(second),
        TaskState::Running,
        "started once the first ended"
    );
}

#[test]
fn a_gpu_quota_keeps_a_user_to_their_gpus_even_when_more_are_free() {
    let w = World::new(&format!(
        "slots = 4\n[gpu]\nbackend = \"sim:2xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n[quotas]\ngpus = 4\n[quotas.user.{}]\ngpus = 1\n",
        crate::users::name_of(crate::users::euid())
    ));
    let a = w.task("a", &["sleep", "1"], "resources = { gpus = 1 }");
    w.pass();
    assert_eq!(w.state(a), TaskState::Running);
    let b = w.task("b", &["true"], "resources = { gpus = 1 }");
    w.pass();
    let key = format!("`quotas.user.{}.gpus` allows 1", w.me.name);
    let reason = w.reason(b);
    assert!(
        reason.contains("holds 1 GPU(s) and this task asks for 1") && reason.contains(&key),
        "b is held back by the GPU quota: {reason}"
    );
    assert_eq!(w.state(b), TaskState::Queued);
    // A CPU task is not held back by a GPU quota.
    let cpu = w.task("cpu", &["true"], "");
    w.pass();
    assert_eq!(w.state(cpu), TaskState::Running);
    assert_eq!(w.state(b), TaskState::Queued);
    w.end(a, RunClass::Ok, 0);
    w.pass();
    assert_eq!(w.state(b), TaskState::Running, "b starts once a ended");
}

#[test]
fn a_submission_past_the_waiting_quota_is_refused_whole_and_nothing_is_queued() {
    let w = World::new("[quotas]\nqueued = 3\n");
    w.task("one", &["true"], "hold = true");
    w.task("two", &["true"], "hold = true");
    let sweep = "name = \"s\"\ncommand = \"echo ${x}\"\n[sweep]\nx = [1, 2]\n";
    let err = w.try_submit_as(&w.me, sweep).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Invalid, "{err}");
    assert!(
        err.message
            .contains("has 2 task(s) waiting and this submission adds 2; `quotas.queued` allows 3"),
        "{err}"
    );
    let listed = w.call(TaskList::default()).unwrap();
    assert_eq!(listed.len(), 2, "nothing queued: {listed:?}");
    w.task("three", &["true"], "hold = true");
    let err = w
        .try_submit_as(&w.me, "[[task]]\nname = \"four\"\ncommand = [\"true\"]\n")
        .unwrap_err();
    assert!(err.message.contains("`quotas.queued` allows 3"), "{err}");
}

#[test]
fn a_retry_counts_against_the_waiting_quota_like_a_submission() {
    let w = World::new("[quotas]\nqueued = 2\n");
    let a = w.task("a", &["true"], "hold = true");
    let b = w.task("b", &["true"], "hold = true");
    w.call(Cancel { id: a }).unwrap();
    w.call(Cancel { id: b }).unwrap();
    w.task("c", &["true"], "hold = true");
    w.task("d", &["true"], "hold = true");
    // Two waiting: retrying a cancelled one would make three.
    let err = w
        .call(Retry {
            id: a,
            no_cache: false,
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Invalid, "{err}");
    assert!(err.message.contains("`quotas.queued` allows 2"), "{err}");
    assert_eq!(w.state(a), TaskState::Cancelled);
}
