//! The delta form: applied as a plugin applies it, a series of changes
//! rebuilds the running tasks and GPUs exactly; a part that did not change
//! is left out; a held snapshot of the other form is no base.

use std::sync::Arc;

use super::super::feed::{Change, Held, change};
use super::*;
use crate::plugins::delta::types as d;
use crate::plugins::incremental::diff::{self, Edit};
use crate::plugins::policy as p;
use crate::plugins::tests::{snapshot, task};

/// What a delta plugin holds, text resolved: running tasks as (id, name,
/// project, GPUs, preemptible) and GPUs as (index, uuid, temperature,
/// closed by).
#[derive(Default)]
struct Plugin {
    generation: u64,
    strings: Vec<String>,
    running: Vec<(i64, String, String, Vec<u32>, bool)>,
    gpus: Vec<(u32, String, u32, Vec<String>)>,
    queue: Vec<i64>,
}

/// Splits `flat` by `counts`, as the SDK does.
fn split<T: Clone>(flat: &[T], counts: &[u32]) -> Vec<Vec<T>> {
    let mut at = 0;
    let parts = counts
        .iter()
        .map(|&c| {
            let part = flat[at..at + c as usize].to_vec();
            at += c as usize;
            part
        })
        .collect();
    assert_eq!(at, flat.len(), "the counts add up to the flat list");
    parts
}

fn edit(e: &d::Edit) -> Edit {
    Edit {
        removed: e.removed.clone(),
        added_at: e.added_at.clone(),
    }
}

impl Plugin {
    fn apply(&mut self, c: &d::Snapshot) {
        if c.base == 0 {
            *self = Plugin::default();
        }
        assert_eq!(c.base, self.generation);
        let mut start = 0;
        for &end in &c.strings.ends {
            self.strings
                .push(c.strings.chars[start..end as usize].to_string());
            start = end as usize;
        }
        let text = |i: u32| self.strings[i as usize].clone();
        if let Some(q) = &c.queue {
            let added = q.added.as_ref().map_or(Vec::new(), |a| a.id.clone());
            assert_eq!(
                q.added.is_some(),
                !added.is_empty(),
                "columns only for tasks added"
            );
            self.queue = diff::apply(&self.queue, &edit(&q.edit), &added).unwrap();
        }
        if let Some(r) = &c.running {
            let counts: Vec<u32> = r.added.iter().map(|t| t.gpu_count).collect();
            let gpus = split(&r.gpu_index, &counts);
            let added: Vec<_> = (r.added.iter().zip(gpus))
                .map(|(t, gpus)| (t.id, text(t.name), text(t.project), gpus, t.preemptible))
                .collect();
            self.running = diff::apply(&self.running, &edit(&r.edit), &added).unwrap();
        }
        if let Some(g) = &c.gpus {
            let counts: Vec<u32> = g.added.iter().map(|g| g.closed_count).collect();
            let closed = split(&g.closed_by, &counts);
            let added: Vec<_> = (g.added.iter().zip(closed))
                .map(|(g, closed)| {
                    let by = closed.iter().map(|&c| text(c)).collect();
                    (g.index, text(g.uuid), g.temperature, by)
                })
                .collect();
            self.gpus = diff::apply(&self.gpus, &edit(&g.edit), &added).unwrap();
        }
        self.generation = c.generation;
    }

    fn holds(&self, s: &p::Snapshot) {
        let running: Vec<_> = (s.running.iter())
            .map(|r| {
                (
                    r.id,
                    r.name.to_string(),
                    r.project.to_string(),
                    r.gpus.clone(),
                    r.preemptible,
                )
            })
            .collect();
        assert_eq!(self.running, running);
        let gpus: Vec<_> = (s.gpus.iter())
            .map(|g| (g.index, g.uuid.clone(), g.temperature, g.closed_by.clone()))
            .collect();
        assert_eq!(self.gpus, gpus);
        assert_eq!(self.queue, s.queue.iter().map(|t| t.id).collect::<Vec<_>>());
    }
}

fn delta(c: &Change) -> &d::Snapshot {
    match &c.wire {
        Wire::Delta(wire) => wire,
        Wire::Incremental(_) => panic!("a delta change in the incremental form"),
    }
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = (self.0)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

fn gpu(index: u32) -> p::Gpu {
    let mut g = snapshot(Vec::new()).gpus.remove(0);
    g.index = index;
    g.uuid = format!("GPU-{index}");
    g
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
        plugin.holds(&s);
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
