use std::path::PathBuf;

use nightjar_core::api::findings::{Finding, Severity};

use super::super::tests::{outcome, store, submit};
use super::*;
use crate::store::{NewRun, RunClass};

fn claimed(s: &mut Store, dir: &std::path::Path, task: i64, at: i64) -> i64 {
    s.claim(task, &NewRun::default(), dir, at)
        .unwrap()
        .unwrap()
        .id
}

fn needs_and_hold(s: &Store, task: i64) -> (Option<i64>, Option<String>, i64) {
    row(
        &s.conn,
        "SELECT needs_gpu_free, held_for_disk, attempts FROM tasks WHERE id = ?1",
        [task],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

#[test]
fn a_gpu_oom_is_queued_again_needing_more_free_memory_than_its_peak() {
    let (dir, mut s) = store();
    let t = submit(&mut s, "command = \"train\"\n[retry]\nmax_attempts = 2\n")[0];
    let run = claimed(&mut s, dir.path(), t, 2_000);
    let out = outcome(RunClass::GpuOom, 1, 3_000);
    let end = RunEnd {
        gpu_peak: Some(10 << 30),
        ..RunEnd::of(&out)
    };
    let f = s.end_run(run, &end).unwrap().unwrap();
    assert_eq!(f.state, TaskState::Queued);
    let reason = f.reason.unwrap();
    assert!(
        reason.contains("attempt 2 of 2") && reason.contains("more than 10.0G free"),
        "{reason}"
    );
    assert_eq!(needs_and_hold(&s, t).0, Some(10 << 30));
    let run2 = claimed(&mut s, dir.path(), t, 20_000);
    s.finish_run(run2, &outcome(RunClass::Ok, 0, 21_000))
        .unwrap();
    assert_eq!(needs_and_hold(&s, t).0, None, "a success forgets the need");
}

#[test]
fn a_disk_full_run_holds_its_task_without_using_an_attempt_until_released() {
    let (dir, mut s) = store();
    let t = submit(&mut s, "command = \"write\"\n")[0];
    let run = claimed(&mut s, dir.path(), t, 2_000);
    let out = outcome(RunClass::DiskFull, 102, 3_000);
    let disks = [PathBuf::from("/data")];
    let end = RunEnd {
        disks: &disks,
        disk_free: 1 << 30,
        ..RunEnd::of(&out)
    };
    let f = s.end_run(run, &end).unwrap().unwrap();
    assert_eq!(f.state, TaskState::Held);
    let reason = f.reason.unwrap();
    assert!(
        reason.contains("/data has 1.0G free") && reason.contains("nightjar release"),
        "{reason}"
    );
    let (_, held, attempts) = needs_and_hold(&s, t);
    assert!(held.unwrap().contains("/data"));
    assert_eq!(attempts, 0, "the attempt is given back");
    s.release(t, 4_000).unwrap();
    assert_eq!(s.task(t).unwrap().state, TaskState::Queued);
    assert_eq!(needs_and_hold(&s, t).1, None, "release forgets the wait");
}

#[test]
fn findings_are_stored_with_the_run_and_an_unlisted_class_fails_at_once() {
    let (dir, mut s) = store();
    let t = submit(&mut s, "command = \"train\"\n[retry]\nmax_attempts = 3\n")[0];
    let run = claimed(&mut s, dir.path(), t, 2_000);
    let findings = vec![Finding {
        validator: "outputs".into(),
        severity: Severity::Error,
        path: Some("metrics.json".into()),
        message: "accuracy is 0.62, wanted >= 0.8".into(),
    }];
    let out = outcome(RunClass::ValidationFailed, 0, 3_000);
    let end = RunEnd {
        findings: &findings,
        ..RunEnd::of(&out)
    };
    let f = s.end_run(run, &end).unwrap().unwrap();
    assert_eq!(f.state, TaskState::Failed);
    assert!(
        f.reason
            .unwrap()
            .contains("`validation-failed` is not in retry.on"),
        "three attempts, but this class is not retried by default"
    );
    assert_eq!(s.run(run).unwrap().findings, findings);
    assert!(
        s.end_run(run, &end).unwrap().is_none(),
        "recording twice is a no-op"
    );
}
