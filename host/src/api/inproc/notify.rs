//! Notifications through the first-party `webhook` notifier to a real
//! receiver on 127.0.0.1 that checks every signature
//! (`tests/support/webhook_receiver.rs`), from runs the test ends: every
//! event delivered once and in order after the receiver was down, and a
//! refused delivery kept as a dead letter that `notify retry` sends again.
//! The delivery lanes run on real time, so a test waits for a delivery by
//! polling, never for a fixed time. (A daemon killed with events pending or
//! mid-send, a hanging server and `notify test` are the end-to-end tier's:
//! `tests/e2e/notify.rs`.)

use std::time::{Duration, Instant};

use super::World;
use crate::api::{NotifyList, NotifyRetry};
use crate::store::RunClass;

#[path = "../../../../tests/support/webhook_receiver.rs"]
#[allow(
    dead_code,
    reason = "the end-to-end tier holds its answers too (`Receiver::hold`)"
)]
mod webhook;
use webhook::{Receiver, SECRET, delivered, in_order_once};

/// A daemon whose notifier `hook` sends `events` to the receiver on `port`,
/// its signing secret in a file only its owner reads, retrying every 300 ms.
fn world(port: u16, events: &str) -> World {
    let secrets = tempfile::tempdir().expect("tempdir");
    let secret = secrets.keep().join("signing");
    std::fs::write(&secret, SECRET).expect("write the secret");
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod the secret");
    let w = World::new(&format!(
        "[notify]\nretry = [\"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\", \"300ms\"]\n\
         [notifier.hook]\nplugin = \"webhook\"\nurl = \"http://127.0.0.1:{port}/hook\"\n\
         allow = [\"127.0.0.1:{port}\"]\nevents = [{events}]\nsecrets = {{ signing = \"file:{}\" }}\n",
        secret.display()
    ));
    w.fx.start_notifications();
    w
}

/// Polls `f` every 20 ms for up to a minute.
fn until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a task to the end `class` gives it; its id.
fn ended(w: &World, name: &str, class: RunClass, code: i32) -> i64 {
    let id = w.task(name, &["true"], "");
    w.pass();
    w.advance(1_000);
    w.end(id, class, code);
    id
}

#[test]
fn a_receiver_down_for_a_while_then_gets_every_event_in_order_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    r.answer(Some(503));
    let w = world(r.port, "\"task-succeeded\"");
    let ids: Vec<i64> = (0..5)
        .map(|i| ended(&w, &format!("t{i}"), RunClass::Ok, 0))
        .collect();
    until("it was tried and refused", || !r.got().is_empty());
    r.answer(None);
    until("all five delivered", || delivered(&r).len() == 5);
    in_order_once(&r, &ids);
}

#[test]
fn a_refused_delivery_is_a_dead_letter_that_notify_retry_sends_again() {
    let dir = tempfile::tempdir().unwrap();
    let r = Receiver::start(dir.path().join("got.jsonl"), None);
    r.answer(Some(400));
    let w = world(r.port, "\"task-failed\"");
    let id = ended(&w, "bad", RunClass::AppError, 1);
    let dead = || w.call(NotifyList::default()).unwrap().dead;
    until("a dead letter", || !dead().is_empty());
    let letter = dead().remove(0);
    assert_eq!(letter.task, Some(id));
    assert!(letter.reason.contains("400"), "{letter:?}");
    let report = format!("{:?}", w.call(NotifyList::default()).unwrap());
    assert!(!report.contains(SECRET), "no secret in notify ls");
    r.answer(None);
    w.call(NotifyRetry { id: letter.id }).unwrap();
    until("delivered on retry", || delivered(&r).len() == 1);
    until("the dead letter is marked delivered", || {
        dead().first().is_some_and(|d| d.state == "delivered")
    });
}
