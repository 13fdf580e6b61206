//! The delta form: applied as a plugin applies it (the model plugin of
//! `parts_model_tests.rs`, which keeps every field), a series of changes
//! rebuilds the snapshot exactly; a part that did not change
//! is left out; a held snapshot of the other form is no base.

use std::sync::Arc;

use super::super::feed::{Change, Held, change};
use super::model_tests::{Lcg, Plugin, gpu, view};
use super::*;
use crate::plugins::delta::types as d;
use crate::plugins::policy as p;
use crate::plugins::tests::{snapshot, task};

fn delta(c: &Change) -> &d::Snapshot {
    match &c.wire {
        Wire::Delta(wire) => wire,
        Wire::Incremental(_) => panic!("a delta change in the incremental form"),
    }
}

#[test]
fn a_series_of_delta_changes_rebuilds_the_running_tasks_and_gpus_exactly() {
    let mut r = Lcg(5);
    let mut plugin = Plugin::default();
    let mut held: Option<Arc<Held>> = None;
    let mut s = snapshot(
        (1..=20)
            .map(|i| task(i, "vision", p::Priority::Normal, i))
            .collect(),
    );
    s.gpus = (0..8).map(gpu).collect();
    let mut next_id = 1_000;
    let (mut left_out, mut sent) = (0, 0);
    for round in 0..400 {
        // Runs end (the last taking the place of one that ended) and
        // start; GPUs warm, cool, close and open; sometimes nothing moves
        // but the clock.
        if r.next(3) > 0 {
            for _ in 0..r.next(3) {
                if !s.running.is_empty() {
                    let k = r.next(s.running.len() as u64) as usize;
                    s.running.swap_remove(k);
                }
            }
            for _ in 0..r.next(3) {
                next_id += 1;
                let gpus: Vec<u32> = (0..r.next(3) as u32).map(|_| r.next(8) as u32).collect();
                s.running.push(p::RunningTask {
                    id: next_id,
                    name: format!("run-{next_id}").into(),
                    project: ["a", "b", "c"][r.next(3) as usize].into(),
                    priority: p::Priority::Normal,
                    gpus,
                    started_at: round,
                    preemptible: r.next(2) == 0,
                });
            }
            for _ in 0..r.next(4) {
                let g = &mut s.gpus[r.next(8) as usize];
                g.temperature = 30 + r.next(60) as u32;
                g.closed_by = (0..r.next(3)).map(|k| format!("policy-{k}")).collect();
            }
            if r.next(10) == 0 {
                s.gpus.swap(0, 1 + r.next(7) as usize);
            }
        }
        s.now += 1_000;
        let snap = Arc::new(s.clone());
        let c = change(held.as_deref(), &snap, Kind::Delta).unwrap();
        let wire = delta(&c);
        if round > 0 {
            let unchanged = (
                held.as_ref().unwrap().running[..] == s.running[..],
                held.as_ref().unwrap().gpus[..] == s.gpus[..],
            );
            assert_eq!(
                (wire.running.is_none(), wire.gpus.is_none()),
                unchanged,
                "round {round}: a part is left out exactly when it did not change"
            );
            assert!(
                wire.queue.is_none() && wire.usage.is_none(),
                "round {round}"
            );
            let before = held.as_ref().unwrap();
            if wire.running.is_none() {
                assert!(
                    Arc::ptr_eq(&before.running, &c.held.running),
                    "round {round}: shared, not copied"
                );
            }
            if wire.gpus.is_none() {
                assert!(
                    Arc::ptr_eq(&before.gpus, &c.held.gpus),
                    "round {round}: shared, not copied"
                );
            }
            left_out += usize::from(wire.running.is_none()) + usize::from(wire.gpus.is_none());
            sent += usize::from(wire.running.is_some()) + usize::from(wire.gpus.is_some());
        }
        plugin.apply(wire);
        assert_eq!(plugin.view, view(&s), "round {round}");
        held = Some(Arc::clone(&c.held));
    }
    assert!(
        left_out > 100 && sent > 100,
        "{left_out} parts left out, {sent} sent"
    );
}

#[test]
fn the_two_forms_are_held_apart_and_one_is_no_base_for_the_other() {
    let mut s = snapshot(
        (1..=5)
            .map(|i| task(i, "vision", p::Priority::Normal, i))
            .collect(),
    );
    s.running.push(p::RunningTask {
        id: 99,
        name: "r".into(),
        project: "vision".into(),
        priority: p::Priority::High,
        gpus: vec![0],
        started_at: 0,
        preemptible: false,
    });
    let pass = crate::plugins::pass::Pass::new(Arc::new(s));
    let inc = pass.change(None, Kind::Incremental).unwrap();
    let del = pass.change(None, Kind::Delta).unwrap();
    assert_ne!(inc.held.generation, del.held.generation);
    assert_eq!(
        (inc.held.kind(), del.held.kind()),
        (Kind::Incremental, Kind::Delta)
    );
    // Made once per pass and form.
    assert!(Arc::ptr_eq(&del, &pass.change(None, Kind::Delta).unwrap()));
    // A delta plugin the host believes holds an incremental snapshot is
    // sent everything, from nothing.
    let from_other = pass.change(Some(&inc.held), Kind::Delta).unwrap();
    assert_eq!(from_other.base(), 0);
    let wire = delta(&from_other);
    let running: Option<Vec<i64>> =
        (wire.running.as_ref()).map(|r| r.added.iter().map(|t| t.id).collect());
    assert_eq!(running, Some(vec![99]));
    let queued = (wire.queue.as_ref())
        .and_then(|q| q.added.as_ref())
        .map(|a| a.id.len());
    assert_eq!(queued, Some(5));
}
