//! A policy's preemption reaches the run's executor, with the session the
//! daemon knows in memory when the store's note of it is missing (a store
//! busy past its timeout refused it): the run is stopped, not left to its
//! watchdog. (Preemption through SLURM and a task's checkpoint are the
//! SLURM target's: `tests/slurm/slurm.rs`.)

use super::World;
use crate::api::wire::TaskState;
use crate::daemon::Stop;

#[test]
fn a_preemption_stops_a_run_whose_session_is_known_only_in_memory() {
    let w = World::new(
        "slots = 1\n[plugins]\nchain = [\"fair-share\"]\npreempt_min_runtime = \"100ms\"\n\
         [plugin.fair-share.config]\npreempt_below = 0.5\n",
    );
    let hog = w.task(
        "hog",
        &["sleep", "600"],
        "project = \"hog\"\npreemptible = true",
    );
    w.pass();
    assert_eq!(w.state(hog), TaskState::Running);
    let run = w.run(hog);
    let session = w.show(hog).runs[0].supervisor_pid.expect("a session");
    w.forget_session_note(run);
    let _starved = w.task("starved", &["true"], "project = \"starved\"");
    w.advance(5_000);
    w.pass();
    assert_eq!(
        *w.fx.recorder.stopped.lock().unwrap(),
        [(run, session as u32, Stop::Cancel)],
        "the preemption reached the run's session"
    );
}
