//! The delta form against a model of a plugin that keeps every field: over
//! hostile series (running-task ids and GPU indices repeated, both lists
//! reordered or emptied, queues out of the host's order, usage reversed,
//! the table worn, the time zone changed, a host that forgets what the
//! plugin holds), the snapshot the plugin rebuilds is the host's, field for
//! field, after every pass.

use std::sync::Arc;

use super::super::feed::{Held, rank};
use super::{Kind, Wire};
use crate::plugins::delta::types as d;
use crate::plugins::incremental::diff::{self, Edit};
use crate::plugins::pass::Pass;
use crate::plugins::policy::{Gpu, Priority, RunningTask, Snapshot};
use crate::plugins::tests::{snapshot, task};

type Queued = (i64, String, String, u8, u32, u64, i64, i64, u32, u64);
type Running = (i64, String, String, u8, Vec<u32>, i64, bool);
type Card = (u32, String, String, [u64; 3], [u32; 3], bool, Vec<String>);
type Used = (String, u32, i64, i64);

/// A snapshot with its text resolved, as a plugin holds it.
#[derive(Debug, Default, PartialEq)]
pub(super) struct View {
    now: i64,
    time_zone: String,
    utc_offset: i32,
    queue: Vec<Queued>,
    running: Vec<Running>,
    gpus: Vec<Card>,
    usage: Vec<Used>,
}

pub(super) fn view(s: &Snapshot) -> View {
    View {
        now: s.now,
        time_zone: s.time_zone.clone(),
        utc_offset: s.utc_offset,
        queue: (s.queue.iter())
            .map(|q| {
                let r = &q.resources;
                let (name, project) = (q.name.to_string(), q.project.to_string());
                let (at, est) = (q.submitted_at, q.estimated_runtime.unwrap_or(0));
                let (gpus, mem) = (r.gpus, r.gpu_mem.unwrap_or(0));
                let p = rank(q.priority);
                (
                    q.id,
                    name,
                    project,
                    p,
                    gpus,
                    mem,
                    at,
                    q.eligible_at,
                    q.attempts,
                    est,
                )
            })
            .collect(),
        running: (s.running.iter())
            .map(|r| {
                let (name, project) = (r.name.to_string(), r.project.to_string());
                let p = rank(r.priority);
                (
                    r.id,
                    name,
                    project,
                    p,
                    r.gpus.clone(),
                    r.started_at,
                    r.preemptible,
                )
            })
            .collect(),
        gpus: (s.gpus.iter())
            .map(|g| {
                let mem = [g.mem_total, g.mem_used, g.mem_reserved];
                let read = [g.util, g.temperature, g.power];
                let (uuid, name) = (g.uuid.clone(), g.name.clone());
                (
                    g.index,
                    uuid,
                    name,
                    mem,
                    read,
                    g.healthy,
                    g.closed_by.clone(),
                )
            })
            .collect(),
        usage: (s.usage.iter())
            .map(|u| {
                let end = u.ended_at.unwrap_or(0);
                (s.project(u).to_string(), u.gpus, u.started_at, end)
            })
            .collect(),
    }
}

/// A delta plugin that keeps every field.
#[derive(Default)]
pub(super) struct Plugin {
    generation: u64,
    strings: Vec<String>,
    pub(super) view: View,
}

fn edit(e: &d::Edit) -> Edit {
    Edit {
        removed: e.removed.clone(),
        added_at: e.added_at.clone(),
    }
}

/// `flat` split by `counts`, which must add up to its length.
fn split<T: Clone>(flat: &[T], counts: impl Iterator<Item = u32>) -> Vec<Vec<T>> {
    let mut at = 0;
    let parts = counts
        .map(|c| {
            at += c as usize;
            flat[at - c as usize..at].to_vec()
        })
        .collect();
    assert_eq!(at, flat.len(), "the counts add up to the flat list");
    parts
}

impl Plugin {
    pub(super) fn apply(&mut self, c: &d::Snapshot) {
        if c.base == 0 {
            *self = Plugin::default();
        }
        assert_eq!(c.base, self.generation);
        let mut start = 0;
        for &end in &c.strings.ends {
            let s = &c.strings.chars[start..end as usize];
            self.strings.push(s.to_string());
            start = end as usize;
        }
        let t = |i: u32| self.strings[i as usize].clone();
        let v = &mut self.view;
        if let Some(q) = &c.queue {
            let added: Vec<Queued> = q.added.as_ref().map_or(Vec::new(), |a| {
                (0..a.id.len())
                    .map(|i| {
                        let (name, project) = (t(a.name[i]), t(a.project[i]));
                        let (at, est) = (a.submitted_at[i], a.estimated_runtime[i]);
                        let (p, gpus, mem) = (a.priority[i], a.gpus[i], a.gpu_mem[i]);
                        let (el, tries) = (a.eligible_at[i], a.attempts[i]);
                        (a.id[i], name, project, p, gpus, mem, at, el, tries, est)
                    })
                    .collect()
            });
            assert_eq!(q.added.is_some(), !added.is_empty());
            v.queue = diff::apply(&v.queue, &edit(&q.edit), &added).unwrap();
        }
        if let Some(r) = &c.running {
            assert!(!(r.edit.removed.is_empty() && r.edit.added_at.is_empty()));
            let gpus = split(&r.gpu_index, r.added.iter().map(|x| x.gpu_count));
            let added: Vec<Running> = (r.added.iter().zip(gpus))
                .map(|(x, g)| {
                    let (name, project) = (t(x.name), t(x.project));
                    (
                        x.id,
                        name,
                        project,
                        x.priority,
                        g,
                        x.started_at,
                        x.preemptible,
                    )
                })
                .collect();
            v.running = diff::apply(&v.running, &edit(&r.edit), &added).unwrap();
        }
        if let Some(g) = &c.gpus {
            assert!(!(g.edit.removed.is_empty() && g.edit.added_at.is_empty()));
            let closed = split(&g.closed_by, g.added.iter().map(|x| x.closed_count));
            let added: Vec<Card> = (g.added.iter().zip(closed))
                .map(|(x, by)| {
                    let mem = [x.mem_total, x.mem_used, x.mem_reserved];
                    let read = [x.util, x.temperature, x.power];
                    let by = by.iter().map(|&c| t(c)).collect();
                    (x.index, t(x.uuid), t(x.name), mem, read, x.healthy, by)
                })
                .collect();
            v.gpus = diff::apply(&v.gpus, &edit(&g.edit), &added).unwrap();
        }
        if let Some(u) = &c.usage {
            let added: Vec<Used> = u.added.as_ref().map_or(Vec::new(), |a| {
                (0..a.project.len())
                    .map(|i| (t(a.project[i]), a.gpus[i], a.started_at[i], a.ended_at[i]))
                    .collect()
            });
            assert_eq!(u.added.is_some(), !added.is_empty());
            v.usage = diff::apply(&v.usage, &edit(&u.edit), &added).unwrap();
        }
        (v.now, v.time_zone, v.utc_offset) = (c.now, t(c.time_zone), c.utc_offset);
        self.generation = c.generation;
    }
}

pub(super) struct Lcg(pub(super) u64);

impl Lcg {
    pub(super) fn next(&mut self, below: u64) -> u64 {
        self.0 = (self.0)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below.max(1)
    }
}

const PROJECTS: [&str; 4] = ["vision", "bio", "nlp", "ü-proj"];

pub(super) fn gpu(index: u32) -> Gpu {
    let mut g = snapshot(Vec::new()).gpus.remove(0);
    g.index = index;
    g.uuid = format!("GPU-{index}");
    g
}

/// The queue of `s` one pass on: tasks leave and arrive (each with a name
/// of its own: the table wears), one is retried, and now and then the
/// queue is left out of the host's order.
fn queue_moves(r: &mut Lcg, s: &mut Snapshot, next_id: &mut i64) {
    for _ in 0..r.next(60).min(s.queue.len() as u64) {
        s.queue.remove(r.next(s.queue.len() as u64) as usize);
    }
    for _ in 0..r.next(60) {
        *next_id += 1;
        let p = [Priority::Low, Priority::Normal, Priority::Urgent][r.next(3) as usize];
        let mut t = task(*next_id, PROJECTS[r.next(4) as usize], p, s.now);
        t.name = format!("n{next_id}é").into();
        t.resources.gpus = r.next(3) as u32;
        s.queue.push(t);
    }
    if r.next(4) == 0 && !s.queue.is_empty() {
        let k = r.next(s.queue.len() as u64) as usize;
        s.queue[k].attempts += 1;
    }
    if r.next(10) != 0 {
        (s.queue).sort_by_key(|t| (std::cmp::Reverse(t.priority), t.submitted_at, t.id));
    }
}

/// The running tasks, GPUs and usage of `s` one pass on.
fn rest_moves(r: &mut Lcg, s: &mut Snapshot, next_id: &mut i64) {
    match r.next(8) {
        0 => s.running.clear(),
        1 => s.gpus.clear(),
        2 => s.running.reverse(),
        3 => s.gpus.reverse(),
        _ => {}
    }
    for _ in 0..r.next(3).min(s.running.len() as u64) {
        s.running.remove(r.next(s.running.len() as u64) as usize);
    }
    for _ in 0..r.next(3) {
        *next_id += 1;
        let repeated = r.next(3) == 0 && !s.running.is_empty();
        let task = RunningTask {
            id: if repeated { s.running[0].id } else { *next_id },
            name: format!("run-{next_id}").into(),
            project: PROJECTS[r.next(4) as usize].into(),
            priority: Priority::High,
            gpus: (0..r.next(3)).map(|_| r.next(5) as u32).collect(),
            started_at: s.now,
            preemptible: r.next(2) == 0,
        };
        s.running
            .insert(r.next(s.running.len() as u64 + 1) as usize, task);
    }
    if s.gpus.len() < 7 && r.next(3) == 0 {
        // A new index, or one already there.
        let g = gpu(r.next(6) as u32);
        s.gpus.insert(r.next(s.gpus.len() as u64 + 1) as usize, g);
    }
    for g in &mut s.gpus {
        if r.next(3) == 0 {
            g.temperature = 60 + r.next(40) as u32;
        }
        if r.next(9) == 0 {
            g.healthy = !g.healthy;
        }
        match r.next(5) {
            0 => g.closed_by = vec!["x".into(), "thermal".into(), "x".into()],
            1 => g.closed_by.clear(),
            _ => {}
        }
    }
    let mut used = s.usage.to_vec();
    if r.next(3) == 0 && !used.is_empty() {
        used.remove(0);
    }
    if r.next(2) == 0 {
        let project = PROJECTS[r.next(4) as usize];
        let now = s.now;
        used.push(crate::plugins::tests::used(s, project, 1, now, None));
    }
    if let Some(u) = used.iter_mut().find(|u| u.ended_at.is_none()) {
        u.ended_at = (r.next(3) == 0).then_some(s.now);
    }
    match r.next(8) {
        0 => used.clear(),
        1 => used.reverse(),
        _ => {}
    }
    s.usage = used.into();
    if r.next(20) == 0 {
        s.time_zone = ["UTC", "Asia/Shanghai"][r.next(2) as usize].into();
        s.utc_offset = r.next(3) as i32 * 3600;
    }
    s.now += 600_000 * r.next(3) as i64;
}

#[test]
fn hostile_series_are_rebuilt_field_for_field_every_pass() {
    let mut from_nothing_while_held = 0;
    for seed in 0..6 {
        let mut r = Lcg(seed);
        let queue = (0..30).map(|i| task(i, PROJECTS[i as usize % 4], Priority::Normal, i));
        let mut s = snapshot(queue.collect());
        s.gpus = (0..4).map(gpu).collect();
        let (mut plugin, mut held) = (Plugin::default(), None::<Arc<Held>>);
        let mut next_id = 1_000;
        for round in 0..300 {
            if round > 0 {
                queue_moves(&mut r, &mut s, &mut next_id);
                rest_moves(&mut r, &mut s, &mut next_id);
            }
            let pass = Pass::new(Arc::new(s.clone()));
            if r.next(3) == 0 {
                // A 0.2.2 member of the chain is fed first, in the same pass.
                pass.change(None, Kind::Incremental).unwrap();
            }
            let c = pass.change(held.as_ref(), Kind::Delta).unwrap();
            let Wire::Delta(wire) = &c.wire else {
                panic!("seed {seed}, round {round}: not the delta form");
            };
            from_nothing_while_held += usize::from(held.is_some() && wire.base == 0);
            plugin.apply(wire);
            assert_eq!(plugin.view, view(&s), "seed {seed}, round {round}");
            // Now and then the host forgets what the plugin holds.
            held = (r.next(30) != 0).then(|| Arc::clone(&c.held));
        }
    }
    assert!(
        from_nothing_while_held > 0,
        "the table wore out at least once"
    );
}
