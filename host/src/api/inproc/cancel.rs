//! A cancel that comes while a run has no session yet: an executor that
//! holds its round's runs for one submission (SLURM's `sbatch` of a job
//! array) knows a run's session only once the submission returns, and a
//! cancel meanwhile found nothing to stop, so the task ran on. The cancel
//! now leaves its word with the run, and the run is stopped as soon as its
//! session is known. (That SLURM's job is then cancelled is the SLURM
//! target's: `tests/slurm/slurm.rs`.)

use std::sync::atomic::Ordering;

use super::World;
use crate::api::Cancel;
use crate::api::wire::TaskState;
use crate::daemon::Stop;
use crate::store::RunClass;

#[test]
fn a_task_cancelled_before_its_runs_session_is_known_is_stopped_once_it_is() {
    let w = World::new("slots = 2\n");
    w.fx.recorder.hold.store(true, Ordering::SeqCst);
    w.fx.recorder.defer.store(true, Ordering::SeqCst);
    let gone = w.task("gone", &["sleep", "600"], "");
    let kept = w.task("kept", &["sleep", "600"], "");
    w.pass();
    assert!(w.handed().is_empty(), "both held for the submission");
    let run = w.run(gone);
    w.call(Cancel { id: gone }).expect("cancel");
    assert!(
        w.fx.recorder.stopped.lock().unwrap().is_empty(),
        "no session to stop yet"
    );
    // The submission returns: both get sessions, and the cancelled one is
    // stopped at once, the other left alone.
    w.fx.recorder.flush_now(&w.fx.daemon);
    assert_eq!(w.handed().len(), 2);
    let session = w.show(gone).runs[0].supervisor_pid.expect("its session");
    assert_eq!(
        *w.fx.recorder.stopped.lock().unwrap(),
        [(run, session as u32, Stop::Cancel)]
    );
    // Its end, as the executor reports a job cancelled before it began.
    w.end(gone, RunClass::Cancelled, 143);
    assert_eq!(w.state(gone), TaskState::Cancelled);
    assert_eq!(w.state(kept), TaskState::Running);
}

#[test]
fn a_cancel_of_a_run_whose_session_is_known_only_in_memory_stops_it() {
    // The session reached the daemon, but its note in the store did not
    // (a store busy past its timeout): the cancel finds it in memory.
    let w = World::new("slots = 1\n");
    let id = w.task("t", &["sleep", "600"], "");
    w.pass();
    let run = w.run(id);
    let session = w.show(id).runs[0].supervisor_pid.expect("a session");
    w.forget_session_note(run);
    w.call(Cancel { id }).expect("cancel");
    assert_eq!(
        *w.fx.recorder.stopped.lock().unwrap(),
        [(run, session as u32, Stop::Cancel)]
    );
}

#[test]
fn a_cancel_between_a_runs_claim_and_its_hold_in_memory_is_not_lost() {
    // The cancel finds the task running (claimed) but the run not yet held
    // in memory: neither a session nor a place to leave its word.
    let w = World::new("slots = 1\n");
    let id = w.task("t", &["sleep", "600"], "");
    let d = std::sync::Arc::downgrade(&w.fx.daemon);
    *w.fx.recorder.on_holds.lock().unwrap() = Some(Box::new(move || {
        let d = d.upgrade().expect("the daemon");
        let effect = d.store().cancel(id, d.now_ms()).expect("cancel");
        for (run, pid) in effect.to_signal {
            d.cancel_run(run, pid);
        }
    }));
    w.pass();
    let run = w.run(id);
    let session = w.show(id).runs[0].supervisor_pid.expect("its session");
    assert_eq!(
        *w.fx.recorder.stopped.lock().unwrap(),
        [(run, session as u32, Stop::Cancel)],
        "stopped once its session is known"
    );
}
