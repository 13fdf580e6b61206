//! The policy against snapshots built natively with the SDK's builders.

use super::*;
use nightjar_sdk::testing::{SnapshotBuilder, keep, queued_task};
use nightjar_sdk::time::DAY_MS;

const HOUR: i64 = 3_600_000;
// 2026-11-30 00:00 UTC, a Monday.
const MONDAY: i64 = 1_796_083_200_000 - DAY_MS;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Reserve::configure(text)
}

fn task(id: i64, project: &str, priority: Priority, gpus: u32) -> QueuedTask<'static> {
    QueuedTask {
        gpus,
        ..queued_task(id, project, priority, id)
    }
}

fn gpus(b: SnapshotBuilder, n: u32) -> SnapshotBuilder {
    (0..n).fold(b, |b, i| b.gpu(i, 40))
}

/// Deferred task ids and their reasons.
fn deferred(e: &Evaluation) -> Vec<(i64, String)> {
    e.verdicts
        .iter()
        .filter_map(|v| match &v.verdict {
            Verdict::Defer(d) => Some((v.task, d.reason.to_string())),
            _ => None,
        })
        .collect()
}

const URGENT_ONE: &str = "[keep-one]\ngpus = 1\nfor_priorities = [\"urgent\"]\n";

#[test]
fn normal_tasks_together_leave_the_kept_gpu_free_and_the_reason_names_it() {
    let cfg = parse(URGENT_ONE).unwrap();
    let s = gpus(SnapshotBuilder::at(MONDAY), 2)
        .queued_task(task(1, "p", Priority::Normal, 1))
        .queued_task(task(2, "p", Priority::Normal, 1))
        .queued_task(task(3, "p", Priority::Normal, 1))
        .build();
    let d = deferred(&Reserve::evaluate(&cfg, &s));
    assert_eq!(
        d.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        vec![2, 3],
        "one of two GPUs may go to normal work, counted across the pass"
    );
    assert_eq!(
        d[0].1,
        "reserve `keep-one`: 1 GPU kept for urgent tasks; 1 free"
    );
}

#[test]
fn an_urgent_task_may_take_the_kept_gpu_and_then_it_is_in_use() {
    let cfg = parse(URGENT_ONE).unwrap();
    let s = gpus(SnapshotBuilder::at(MONDAY), 2)
        .queued_task(task(1, "p", Priority::Normal, 1))
        .queued_task(task(2, "p", Priority::Normal, 1))
        .queued_task(task(3, "p", Priority::Urgent, 1))
        .build();
    let d = deferred(&Reserve::evaluate(&cfg, &s));
    assert_eq!(
        d.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        vec![2],
        "the second normal task waits; the urgent one is never deferred"
    );
    // Once the urgent task runs on GPU 1, the reservation is in use: the
    // normal task may take GPU 0 when it frees.
    let mut s = gpus(SnapshotBuilder::at(MONDAY), 2)
        .queued_task(task(2, "p", Priority::Normal, 1))
        .build();
    s.running.push(RunningTask {
        id: 1,
        name: keep("u"),
        project: keep("p"),
        priority: Priority::Urgent,
        gpus: vec![1],
        started_at: MONDAY,
        preemptible: false,
    });
    assert!(deferred(&Reserve::evaluate(&cfg, &s)).is_empty());
}

#[test]
fn lending_lets_others_use_it_only_while_none_of_its_tasks_waits() {
    let cfg = parse(&format!("{URGENT_ONE}lend = true\n")).unwrap();
    let quiet = gpus(SnapshotBuilder::at(MONDAY), 2)
        .queued_task(task(1, "p", Priority::Normal, 1))
        .queued_task(task(2, "p", Priority::Normal, 1))
        .build();
    assert!(deferred(&Reserve::evaluate(&cfg, &quiet)).is_empty());
    let busy = gpus(SnapshotBuilder::at(MONDAY), 2)
        .queued_task(task(1, "p", Priority::Normal, 1))
        .queued_task(task(2, "p", Priority::Normal, 1))
        .queued_task(task(3, "p", Priority::Urgent, 1))
        .build();
    assert_eq!(deferred(&Reserve::evaluate(&cfg, &busy)).len(), 1);
}

#[test]
fn a_project_reservation_holds_only_in_its_window_in_the_daemons_zone() {
    let cfg = parse(
        "[clinic-day]\ngpus = 1\nfor_projects = [\"clinic\"]\nwindows = [{ from = \"09:00\", to = \"18:00\", days = \"weekday\" }]\n",
    )
    .unwrap();
    let at = |now: i64, offset: i32| {
        gpus(SnapshotBuilder::at(now), 1)
            .utc_offset(offset)
            .queued_task(task(1, "vision", Priority::Normal, 1))
            .queued_task(task(2, "clinic", Priority::Normal, 1))
            .build()
    };
    // Monday 10:00 UTC: inside; the clinic's own task is not deferred.
    let e = Reserve::evaluate(&cfg, &at(MONDAY + 10 * HOUR, 0));
    let d = deferred(&e);
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].1,
        "reserve `clinic-day`: 1 GPU kept for project clinic 09:00-18:00 (weekday); 1 free"
    );
    match &e.verdicts[0].verdict {
        Verdict::Defer(def) => assert_eq!(
            def.until,
            Some(MONDAY + 18 * HOUR),
            "asked again when the window closes"
        ),
        other => panic!("{other:?}"),
    }
    // 10:00 UTC is 18:00 in Shanghai: the window has closed there.
    assert!(deferred(&Reserve::evaluate(&cfg, &at(MONDAY + 10 * HOUR, 8 * 3600))).is_empty());
    // Saturday 10:00: not a weekday.
    assert!(
        deferred(&Reserve::evaluate(
            &cfg,
            &at(MONDAY + 5 * DAY_MS + 10 * HOUR, 0)
        ))
        .is_empty()
    );
}

#[test]
fn a_window_over_midnight_holds_on_the_morning_after_the_day_it_starts() {
    let cfg = parse(
        "[night]\ngpus = 1\nfor_priorities = \"urgent\"\nwindows = [{ from = \"22:00\", to = \"06:00\", days = [\"fri\"] }]\n",
    )
    .unwrap();
    let at = |now: i64| {
        let s = gpus(SnapshotBuilder::at(now), 1)
            .queued_task(task(1, "p", Priority::Normal, 1))
            .build();
        deferred(&Reserve::evaluate(&cfg, &s)).len()
    };
    let friday = MONDAY + 4 * DAY_MS;
    assert_eq!(at(friday + 23 * HOUR), 1);
    assert_eq!(
        at(friday + DAY_MS + 5 * HOUR),
        1,
        "Saturday 05:00 is Friday's window"
    );
    assert_eq!(at(friday + 2 * DAY_MS + 5 * HOUR), 0, "Sunday 05:00 is not");
    assert_eq!(at(friday + 21 * HOUR), 0);
}

#[test]
fn gpu_memory_is_kept_free_on_one_gpu() {
    let cfg = parse("[mem]\ngpu_mem = \"40GiB\"\nfor_priorities = [\"urgent\"]\n").unwrap();
    let mem = |id, gib: u64| QueuedTask {
        gpu_mem: Some(gib << 30),
        ..task(id, "p", Priority::Normal, 1)
    };
    // Two 80 GiB GPUs, first fit as the host places: 50 on GPU 0; the next
    // 50 would go to GPU 1 and leave 30 on each (deferred); 30 fits next to
    // the first 50 and leaves GPU 1 whole.
    let s = gpus(SnapshotBuilder::at(MONDAY), 2)
        .queued_task(mem(1, 50))
        .queued_task(mem(2, 50))
        .queued_task(mem(3, 30))
        .build();
    let d = deferred(&Reserve::evaluate(&cfg, &s));
    assert_eq!(d.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![2]);
    assert_eq!(
        d[0].1,
        "reserve `mem`: 40 GiB of GPU memory kept for urgent tasks; at most 80 GiB free on one GPU"
    );
}

#[test]
fn a_reservation_larger_than_the_machine_keeps_everything_and_names_the_key() {
    let cfg = parse("[big]\ngpus = 9\nfor_priorities = [\"urgent\"]\n").unwrap();
    let s = gpus(SnapshotBuilder::at(MONDAY), 2)
        .queued_task(task(1, "p", Priority::Normal, 1))
        .build();
    let d = deferred(&Reserve::evaluate(&cfg, &s));
    assert!(
        d[0].1
            .contains("key `big.gpus` is 9, more than the 2 GPU(s) here"),
        "{}",
        d[0].1
    );
    // CPU-only work is never this policy's business.
    let s = gpus(SnapshotBuilder::at(MONDAY), 2)
        .queued_task(task(2, "p", Priority::Normal, 0))
        .build();
    assert!(deferred(&Reserve::evaluate(&cfg, &s)).is_empty());
}

#[test]
fn hostile_configs_are_refused_naming_the_key() {
    let key = |text: &str| parse(text).unwrap_err().key.unwrap_or_default();
    assert_eq!(
        key("[a]\ngpus = 1\nfor_priorities = [\"urgent\"]\ncolour = 1\n"),
        "a.colour"
    );
    assert_eq!(key("[a]\nfor_priorities = [\"urgent\"]\n"), "a.gpus");
    assert_eq!(
        key("[a]\ngpus = 1\ngpu_mem = \"1GiB\"\nfor_priorities = [\"urgent\"]\n"),
        "a.gpu_mem"
    );
    assert_eq!(
        key("[a]\ngpus = 0\nfor_priorities = [\"urgent\"]\n"),
        "a.gpus"
    );
    assert_eq!(
        key("[a]\ngpus = 99999\nfor_priorities = [\"urgent\"]\n"),
        "a.gpus"
    );
    assert_eq!(
        key("[a]\ngpus = -1\nfor_priorities = [\"urgent\"]\n"),
        "a.gpus"
    );
    assert_eq!(key("[a]\ngpus = 1\n"), "a.for_priorities");
    assert_eq!(
        key("[a]\ngpus = 1\nfor_priorities = [\"asap\"]\n"),
        "a.for_priorities"
    );
    assert_eq!(
        key(
            "[a]\ngpus = 1\nfor_projects = [\"x\"]\nwindows = [{ from = \"9am\", to = \"18:00\" }]\n"
        ),
        "a.windows[0].from"
    );
    assert_eq!(
        key(
            "[a]\ngpus = 1\nfor_projects = [\"x\"]\nwindows = [{ from = \"09:00\", to = \"09:00\" }]\n"
        ),
        "a.windows[0].to"
    );
    assert_eq!(
        key(
            "[a]\ngpus = 1\nfor_projects = [\"x\"]\nwindows = [{ from = \"09:00\", to = \"18:00\", days = \"someday\" }]\n"
        ),
        "a.windows[0].days"
    );
    assert_eq!(
        key("gpus = 1\n"),
        "gpus",
        "a top-level key is not a reservation table"
    );
    assert!(
        parse("").unwrap().is_empty(),
        "no reservation: nothing kept"
    );
}
