//! A daemon with every slot taken has nothing to decide until a run ends:
//! it must not run scheduling passes meanwhile. Two wake-ups left in the
//! past made it spin at about 1,200 passes a second: the chain's reuse
//! window of a ranking that was never renewed (every slot taken), and a
//! retry's backoff that had ended while the task waited for a slot.

use std::time::Duration;

use crate::harness::Nj;

/// Asserts the daemon logged at most a handful of passes (one `scheduling
/// pass` line each) in a 2 s window while `what`; a spinning one logs
/// thousands.
fn assert_quiet(nj: &Nj, what: &str) {
    let before = nj.daemon_log().matches("scheduling pass").count();
    std::thread::sleep(Duration::from_secs(2));
    let n = nj.daemon_log().matches("scheduling pass").count() - before;
    assert!(n <= 10, "{n} passes in 2 s {what}");
}

/// Whether task `id`'s first run has ended (its retry may have begun).
fn first_attempt_ended(nj: &Nj, id: i64) -> bool {
    nj.show(id)["runs"]
        .as_array()
        .and_then(|r| r.first())
        .is_some_and(|r| !r["finished_at"].is_null())
}

/// A daemon whose passes are logged.
fn counting(config: &str) -> Nj {
    let mut nj = Nj::new(config);
    nj.env
        .push(("NIGHTJAR_LOG".into(), "info,nightjar::pass=trace".into()));
    nj.start();
    nj
}

#[test]
fn with_every_slot_taken_and_a_queue_behind_the_chain_runs_no_passes() {
    // The default chain (the priority policy), two slots.
    let nj = counting("slots = 2\n");
    let long: Vec<i64> = (0..2).map(|_| nj.submit(&["--", "sleep", "8"])).collect();
    for _ in 0..3 {
        nj.submit(&["--", "true"]);
    }
    nj.until("both slots taken", || nj.running() == 2);
    // The chain's last ranking runs out 25 ms to 2 s after it was made.
    std::thread::sleep(Duration::from_millis(2500));
    assert_quiet(&nj, "with every slot taken and nothing ending");
    for id in long {
        nj.ok(&["cancel", &id.to_string()]);
    }
}

#[test]
fn a_retry_whose_backoff_ended_waits_for_a_slot_without_passes() {
    let nj = counting("slots = 1\n[plugins]\nchain = []\n");
    let file = nj.dir.path().join("retry.toml");
    std::fs::write(
        &file,
        "command = \"exit 3\"\n[retry]\nmax_attempts = 2\nbackoff = \"300ms\"\non = [\"app-error\"]\n",
    )
    .unwrap();
    let retried = nj.submit(&["-f", file.to_str().unwrap()]);
    nj.until("the first attempt failed and backs off", || {
        first_attempt_ended(&nj, retried)
    });
    let long = nj.submit(&["--", "sleep", "8"]);
    nj.until("the long task holds the slot", || nj.running() == 1);
    // The backoff ends while the slot is taken.
    std::thread::sleep(Duration::from_millis(500));
    assert_quiet(&nj, "while the retry waits for the slot");
    nj.ok(&["cancel", &long.to_string()]);
    nj.wait(retried);
    assert_eq!(
        nj.show(retried)["runs"].as_array().map(Vec::len),
        Some(2),
        "the retry ran once the slot was free"
    );
}

#[test]
fn retries_whose_backoffs_end_during_a_pass_still_start() {
    // Free slots for every retry; the second attempts run long, so no run's
    // end asks for a pass. A backoff that ends while a pass is starting
    // other retries must still wake the scheduler.
    let n = 16;
    let nj = counting(&format!("slots = {n}\n[plugins]\nchain = []\n"));
    let ids: Vec<i64> = (0..n)
        .map(|i| {
            let marker = nj.dir.path().join(format!("tried-{i}"));
            let file = nj.dir.path().join(format!("retry-{i}.toml"));
            std::fs::write(
                &file,
                format!(
                    "command = \"if [ -e {m} ]; then sleep 30; else touch {m}; exit 3; fi\"\n\
                     [retry]\nmax_attempts = 2\nbackoff = \"1s\"\non = [\"app-error\"]\n",
                    m = marker.display()
                ),
            )
            .unwrap();
            nj.submit(&["-f", file.to_str().unwrap()])
        })
        .collect();
    nj.until("every first attempt failed", || {
        ids.iter().all(|id| first_attempt_ended(&nj, *id))
    });
    nj.until("every retry runs", || nj.running() == n);
    for id in ids {
        nj.ok(&["cancel", &id.to_string()]);
    }
}
