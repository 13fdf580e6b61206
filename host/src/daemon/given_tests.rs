//! The daemon's pass on what it is given: a simulated clock and an executor
//! that records what it is handed, in-process on a real SQLite file, with
//! no supervisor, no runtime thread and no real time passing. What starts,
//! when it is recorded as started and when a schedule fires follow the
//! given clock, and the ends an executor reports are what the store keeps.

use std::sync::atomic::Ordering;

use super::given::Clock;
use super::run::executor::Stop;
use super::testkit::{Fixture, T0};
use crate::store::{RunClass, TaskState};
use crate::task::file::{Format, parse};
use crate::task::resolve::resolve;

/// A daemon with `slots` slots on the simulated clock at [`T0`].
fn daemon(slots: u32) -> Fixture {
    Fixture::new(slots)
}

/// A run's end as an executor reports it: `class`, exit `code`, at `at`.
use crate::store::tests::outcome as ended;

/// What these tests ask of the fixture beyond its own methods.
trait Given {
    fn submit(&self, toml: &str) -> Vec<i64>;
    fn state(&self, task: i64) -> TaskState;
}

impl Given for Fixture {
    /// Submits a task file (TOML) at the simulated now, straight to the store.
    fn submit(&self, toml: &str) -> Vec<i64> {
        let entries = resolve(&parse(toml, Format::Toml).unwrap(), self.dir(), "t").unwrap();
        let now = self.clock.now_ms();
        let tz = self.daemon.cfg.tz();
        self.daemon
            .store()
            .submit(&entries, now, |expr| {
                crate::task::schedule::parse(expr)
                    .ok()?
                    .next_after(crate::time::to_utc(now), tz)
                    .map(|t| t.timestamp_millis())
            })
            .unwrap()
    }

    fn state(&self, task: i64) -> TaskState {
        self.daemon.store().show(task).unwrap().task.state
    }
}

#[test]
fn a_pass_starts_what_fits_through_the_given_executor_at_the_given_clocks_time() {
    let f = daemon(2);
    let ids = f.submit(
        r#"
[[task]]
name = "a"
command = ["echo", "a"]
[[task]]
name = "b"
command = ["echo", "b"]
[[task]]
name = "c"
command = ["echo", "c"]
"#,
    );
    f.clock.set(T0 + 5_000);
    f.pass();
    let handed = f.handed();
    assert_eq!(handed.len(), 2, "two slots, two launches: {handed:?}");
    assert_eq!(handed[0].1, "echo a");
    assert_eq!(handed[1].1, "echo b");
    assert!(handed.iter().all(|h| h.2 == T0 + 5_000), "{handed:?}");
    let shown = f.daemon.store().show(ids[0]).unwrap();
    assert_eq!(shown.task.state, TaskState::Running);
    assert_eq!(
        shown.runs[0].started_at,
        T0 + 5_000,
        "started on the given clock"
    );
    assert_eq!(
        shown.runs[0].supervisor_pid,
        Some(900_000),
        "the session the executor gave"
    );
    assert_eq!(f.state(ids[2]), TaskState::Queued, "no third slot");

    // The executor reports the first run's end a minute later: recorded,
    // and its slot goes to the third task at the clock's new time.
    f.clock.set(T0 + 65_000);
    let ended = ended(RunClass::Ok, 0, T0 + 65_000);
    assert!(
        f.daemon.report_end(handed[0].0, &ended),
        "recorded and flushed"
    );
    f.pass();
    let handed = f.handed();
    assert_eq!(handed.len(), 3, "{handed:?}");
    assert_eq!((handed[2].1.as_str(), handed[2].2), ("echo c", T0 + 65_000));
    assert_eq!(f.state(ids[0]), TaskState::Succeeded);
    let run = &f.daemon.store().show(ids[0]).unwrap().runs[0];
    assert_eq!(run.class, Some(RunClass::Ok));
}

#[test]
fn a_launch_the_executor_refuses_fails_its_run_once_and_frees_the_slot() {
    let f = daemon(1);
    f.recorder.refuse.store(1, Ordering::SeqCst);
    let ids = f.submit(
        r#"
[[task]]
name = "a"
command = ["echo", "a"]
[[task]]
name = "b"
command = ["echo", "b"]
"#,
    );
    // Two passes: the slot `a` was placed on is free again at once, so
    // `b` starts in the first or, at the latest, the second.
    f.pass();
    f.pass();
    let a = f.daemon.store().show(ids[0]).unwrap();
    assert_eq!(
        a.task.state,
        TaskState::Failed,
        "one attempt, failed to prepare"
    );
    assert_eq!(a.runs.len(), 1, "recorded once: {:?}", a.runs);
    assert_eq!(a.runs[0].class, Some(RunClass::AppError));
    let message = a.runs[0].message.clone().unwrap_or_default();
    assert!(message.contains("refused by the test"), "{message}");
    assert_eq!(a.runs[0].finished_at, Some(T0), "ended on the given clock");
    let handed = f.handed();
    assert_eq!(handed.len(), 1, "{handed:?}");
    assert_eq!(handed[0].1, "echo b");
    assert_eq!(f.state(ids[1]), TaskState::Running);
}

#[test]
fn a_schedule_fires_when_the_given_clock_passes_its_time_not_the_real_one() {
    let f = daemon(1);
    let ids = f.submit(
        r#"
[[task]]
name = "nightly"
command = ["true"]
schedule = "0 3 * * *"
"#,
    );
    let template = ids[0];
    // 02:59 on the given clock: not yet (the real clock is weeks later).
    f.clock.set(T0 + (2 * 60 + 59) * 60_000);
    f.pass();
    assert!(f.handed().is_empty(), "{:?}", f.handed());
    // 03:00:01: one firing, one run, started at the given time.
    let fired_at = T0 + 3 * 3_600_000 + 1_000;
    f.clock.set(fired_at);
    f.pass();
    let handed = f.handed();
    assert_eq!(handed.len(), 1, "{handed:?}");
    assert_eq!((handed[0].1.as_str(), handed[0].2), ("true", fired_at));
    let next = f.daemon.store().show(template).unwrap().task.next_fire_at;
    assert_eq!(
        next,
        Some(T0 + 27 * 3_600_000),
        "the next firing is a day on"
    );
}

#[test]
fn a_retrys_backoff_is_waited_out_on_the_given_clock() {
    let f = daemon(1);
    let ids = f.submit(
        r#"
[[task]]
name = "flaky"
command = ["fetch"]
[task.retry]
max_attempts = 2
backoff = "30s"
on = ["network"]
"#,
    );
    f.pass();
    let first = f.handed();
    assert_eq!(first.len(), 1, "{first:?}");
    // It ends as a network failure 5 s in: retried after a 30 s backoff.
    f.clock.set(T0 + 5_000);
    let failed = ended(RunClass::Network, 103, T0 + 5_000);
    assert!(f.daemon.report_end(first[0].0, &failed));
    assert_eq!(f.state(ids[0]), TaskState::Queued);
    // 34 s on the given clock: still in its backoff (the real clock is
    // weeks past it), so nothing starts.
    f.clock.set(T0 + 34_000);
    f.pass();
    assert_eq!(f.handed().len(), 1, "{:?}", f.handed());
    // 36 s: the backoff is over; the second attempt starts then.
    f.clock.set(T0 + 36_000);
    f.pass();
    let handed = f.handed();
    assert_eq!(handed.len(), 2, "{handed:?}");
    assert_eq!(handed[1].2, T0 + 36_000);
    let shown = f.daemon.store().show(ids[0]).unwrap();
    assert_eq!(shown.runs.len(), 2);
    assert_eq!(shown.runs[0].class, Some(RunClass::Network));
}

#[test]
fn a_cancel_and_a_kill_reach_the_run_through_its_executor() {
    let f = daemon(1);
    f.submit(
        r#"
[[task]]
name = "long"
command = ["sleep", "1d"]
"#,
    );
    f.pass();
    let handed = f.handed();
    assert_eq!(handed.len(), 1, "{handed:?}");
    let run = handed[0].0;
    f.daemon.cancel_run(run, Some(900_000));
    f.daemon.stop_run(run, Some(900_000), Stop::Kill);
    assert_eq!(
        *f.recorder.stopped.lock().unwrap(),
        [(run, 900_000, Stop::Cancel), (run, 900_000, Stop::Kill)],
        "no signal of the daemon's own: the executor was asked"
    );
}

#[test]
fn a_round_held_for_flush_gets_its_sessions_then_and_one_given_back_frees_its_slot() {
    let f = daemon(2);
    f.recorder.hold.store(true, Ordering::SeqCst);
    f.recorder.later.store(1, Ordering::SeqCst);
    let ids = f.submit(
        r#"
[[task]]
name = "a"
command = ["echo", "a"]
[[task]]
name = "b"
command = ["echo", "b"]
[[task]]
name = "c"
command = ["echo", "c"]
"#,
    );
    // Both slots are taken in the pass; its flush gives `a` back (the
    // batch system did not answer) and hands `b` over.
    f.pass();
    let handed = f.handed();
    assert_eq!(handed.len(), 1, "{handed:?}");
    assert_eq!(handed[0].1, "echo b");
    let b = f.daemon.store().show(ids[1]).unwrap();
    assert_eq!(b.task.state, TaskState::Running);
    assert_eq!(
        b.runs[0].supervisor_pid,
        Some(900_000),
        "the session recorded at flush"
    );
    let a = f.daemon.store().show(ids[0]).unwrap();
    assert_eq!(a.task.state, TaskState::Queued, "given back: {:?}", a.runs);
    assert_eq!(a.runs.len(), 1, "{:?}", a.runs);
    let message = a.runs[0].message.clone().unwrap_or_default();
    assert!(
        a.runs[0].class == Some(RunClass::Lost) && message.contains("attempt not counted"),
        "{message}"
    );
    // Its slot is free again: the next pass starts two.
    f.pass();
    let handed = f.handed();
    let argv: Vec<&str> = handed.iter().map(|h| h.1.as_str()).collect();
    assert_eq!(argv.len(), 2, "{handed:?}");
    assert!(
        argv.contains(&"echo b") && argv.contains(&"echo a"),
        "{argv:?}"
    );
    assert_eq!(f.state(ids[0]), TaskState::Running);
    assert_eq!(f.state(ids[2]), TaskState::Queued, "both slots taken");
}
