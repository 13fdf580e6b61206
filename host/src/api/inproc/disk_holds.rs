//! A disk-full run holds its task without spending an attempt, until every
//! file system it writes to has `[classes] disk_free` of room (the disk
//! watch's look, `Daemon::release_disk_holds`, made by the test); a task
//! that keeps claiming a full disk fails on its third such run in a row.
//! (That a real process's "No space left on device" is classed disk-full is
//! the end-to-end tier's: `tests/e2e/classes_real.rs`.)

use super::World;
use crate::api::wire::TaskState;
use crate::api::{Release, Why};
use crate::store::RunClass;

/// The classes of a task's runs, oldest first.
fn classes(w: &World, id: i64) -> Vec<Option<RunClass>> {
    w.show(id).runs.iter().map(|r| r.class).collect()
}

/// Whether a task's events hold one of `kind` whose message contains `text`.
fn has_event(w: &World, id: i64, kind: &str, text: &str) -> bool {
    w.show(id)
        .events
        .iter()
        .any(|e| e.kind == kind && e.message.contains(text))
}

#[test]
fn a_disk_full_run_is_held_without_an_attempt_and_released_when_there_is_room() {
    // Any free byte is room enough.
    let w = World::new("[classes]\ndisk_free = \"1B\"");
    let id = w.task("writer", &["write"], "");
    w.pass();
    w.advance(1_000);
    w.end(id, RunClass::DiskFull, 1);
    assert_eq!(w.state(id), TaskState::Held);
    assert!(has_event(&w, id, "held", ""), "{:?}", w.show(id).events);
    assert_eq!(w.fx.daemon.release_disk_holds(), 1, "the disk watch's look");
    assert!(
        has_event(&w, id, "released", "disk room again"),
        "{:?}",
        w.show(id).events
    );
    // One attempt in all, yet it runs again: the disk-full attempt was given back.
    w.pass();
    assert_eq!(w.state(id), TaskState::Running);
    w.end(id, RunClass::Ok, 0);
    assert_eq!(w.state(id), TaskState::Succeeded);
    assert_eq!(
        classes(&w, id),
        [Some(RunClass::DiskFull), Some(RunClass::Ok)]
    );
}

#[test]
fn a_task_held_for_disk_room_waits_and_release_lets_it_run() {
    let w = World::new("[classes]\ndisk_free = \"1EiB\"");
    let id = w.task("writer", &["write"], "");
    w.pass();
    w.end(id, RunClass::DiskFull, 1);
    assert_eq!(w.state(id), TaskState::Held);
    assert_eq!(
        w.fx.daemon.release_disk_holds(),
        0,
        "no disk has an exbibyte free"
    );
    let why = w.call(Why { id }).unwrap().reason.unwrap_or_default();
    assert!(
        why.contains("disk-full") && why.contains("1.0E free") && why.contains("nightjar release"),
        "why names the class, the room it waits for and the way out: {why}"
    );
    w.call(Release { id }).unwrap();
    w.pass();
    w.end(id, RunClass::Ok, 0);
    assert_eq!(
        classes(&w, id),
        [Some(RunClass::DiskFull), Some(RunClass::Ok)]
    );
}

/// A task that only *says* its disk is full (the disk has room) was held,
/// released at the disk watch's next look, ran again and was held again,
/// forever, never using an attempt: a GPU slot burnt all night. A third
/// disk-full run in a row now fails it like any other class.
#[test]
fn a_task_that_keeps_claiming_a_full_disk_is_not_rerun_forever() {
    let w = World::new("[classes]\ndisk_free = \"1B\"");
    let id = w.task("liar", &["write"], "");
    for round in 1..=3 {
        w.pass();
        assert_eq!(w.state(id), TaskState::Running, "round {round}");
        w.advance(1_000);
        w.end(id, RunClass::DiskFull, 1);
        if round < 3 {
            assert_eq!(w.state(id), TaskState::Held, "round {round}");
            assert_eq!(w.fx.daemon.release_disk_holds(), 1, "round {round}");
        }
    }
    assert_eq!(w.state(id), TaskState::Failed);
    assert_eq!(classes(&w, id), [Some(RunClass::DiskFull); 3]);
    let reason = w.reason(id);
    assert!(
        reason.contains("disk-full 3 times in a row") && reason.contains("nightjar retry"),
        "{reason}"
    );
}

/// A task held for disk room whose output folder was then deleted (the
/// obvious way to make room) stayed held for ever: the disk watch asked
/// `statvfs` of a path that no longer existed and took no answer as no
/// room. It now asks the nearest folder that exists.
#[test]
fn a_held_task_whose_output_folder_was_deleted_is_released() {
    let w = World::new("[classes]\ndisk_free = \"1B\"");
    let out = w.fx.dir().join("work/out");
    std::fs::create_dir_all(out.join("deep")).unwrap();
    let id = w.task(
        "writer",
        &["write"],
        &format!("output = {:?}", out.join("deep").display().to_string()),
    );
    w.pass();
    w.end(id, RunClass::DiskFull, 1);
    assert_eq!(w.state(id), TaskState::Held);
    std::fs::remove_dir_all(&out).unwrap();
    assert_eq!(
        w.fx.daemon.release_disk_holds(),
        1,
        "asked of the nearest folder that exists"
    );
    w.pass();
    assert_eq!(w.state(id), TaskState::Running, "released and run again");
}
