//! `ls`'s limit keeps the rows that matter and counts what it left out.

use super::tests::{outcome, store, submit};
use super::*;

/// Six tasks at t = 1 s: 1 and 2 succeeded, 3 running, 4 to 6 queued.
fn six(dir: &std::path::Path, s: &mut Store) -> Vec<i64> {
    let ids: Vec<i64> = (0..6)
        .flat_map(|_| submit(s, "command = \"true\"\n"))
        .collect();
    for (i, &id) in ids[..3].iter().enumerate() {
        let run = s
            .claim(id, &NewRun::default(), dir, 2_000)
            .unwrap()
            .unwrap();
        s.set_run_started(run.id, 4000 + i as u32, None).unwrap();
        if i < 2 {
            s.finish_run(run.id, &outcome(RunClass::Ok, 0, 3_000 + i as i64))
                .unwrap();
        }
    }
    ids
}

fn every() -> ListFilter {
    ListFilter {
        all: true,
        ..Default::default()
    }
}

fn ids_of(rows: &[TaskRow]) -> Vec<i64> {
    rows.iter().map(|r| r.id).collect()
}

#[test]
fn a_limit_keeps_running_then_oldest_waiting_then_newest_ended_listed_by_id() {
    let (dir, mut s) = store();
    let ids = six(dir.path(), &mut s);
    let all = s.list(&every(), None).unwrap();
    assert_eq!(ids_of(&all), ids, "no limit: every row, by id");
    let three = s.list(&every(), Some(3)).unwrap();
    assert_eq!(ids_of(&three), vec![ids[2], ids[3], ids[4]]);
    let five = s.list(&every(), Some(5)).unwrap();
    assert_eq!(ids_of(&five), vec![ids[1], ids[2], ids[3], ids[4], ids[5]]);
    assert_eq!(ids_of(&s.list(&every(), Some(6)).unwrap()), ids);
    assert!(s.list(&every(), Some(0)).unwrap().is_empty());
}

#[test]
fn the_count_is_by_state_over_the_same_filter_as_the_listing() {
    let (dir, mut s) = store();
    six(dir.path(), &mut s);
    let count = s.list_count(&every()).unwrap();
    let of = |state| count.iter().find(|c| c.state == state).map(|c| c.count);
    assert_eq!(of(TaskState::Queued), Some(3));
    assert_eq!(of(TaskState::Running), Some(1));
    assert_eq!(of(TaskState::Succeeded), Some(2));
    assert_eq!(count.len(), 3, "{count:?}");
    let queued = ListFilter {
        state: Some(TaskState::Queued),
        ..every()
    };
    assert_eq!(
        s.list_count(&queued).unwrap(),
        vec![nightjar_core::api::StateCount {
            state: TaskState::Queued,
            count: 3
        }]
    );
    assert_eq!(s.list(&queued, Some(2)).unwrap().len(), 2);
}

/// Claims and starts task `id` at t = 2 s; with `ends`, it succeeds at 3 s.
fn run(dir: &std::path::Path, s: &mut Store, id: i64, ends: bool) {
    let run = s
        .claim(id, &NewRun::default(), dir, 2_000)
        .unwrap()
        .unwrap();
    s.set_run_started(run.id, 4000, None).unwrap();
    if ends {
        s.finish_run(run.id, &outcome(RunClass::Ok, 0, 3_000))
            .unwrap();
    }
}

#[test]
fn a_sweep_is_kept_as_its_members_are_running_while_one_runs_ended_once_all_have() {
    let (dir, mut s) = store();
    let sweep = "command = \"echo ${x}\"\n[sweep]\nx = [1, 2]\n";
    let ended = submit(&mut s, sweep)[0];
    let waiting: Vec<i64> = (0..3)
        .flat_map(|_| submit(&mut s, "command = \"true\"\n"))
        .collect();
    let runs = submit(&mut s, sweep)[0];
    for m in s.show(ended).unwrap().members {
        run(dir.path(), &mut s, m.id, true);
    }
    let member = s.show(runs).unwrap().members[0].id;
    run(dir.path(), &mut s, member, false);
    // The sweep rows themselves stay `sweep` with no end time.
    let two = s.list(&every(), Some(2)).unwrap();
    assert_eq!(
        ids_of(&two),
        vec![waiting[0], runs],
        "the running sweep, then the oldest waiting; not the ended sweep"
    );
    let four = s.list(&every(), Some(4)).unwrap();
    assert_eq!(ids_of(&four), [&waiting[..], &[runs]].concat());
    let five = s.list(&every(), Some(5)).unwrap();
    assert_eq!(ids_of(&five), ids_of(&s.list(&every(), None).unwrap()));
}
