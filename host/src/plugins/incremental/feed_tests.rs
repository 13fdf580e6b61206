//! The change the host sends: applied as a plugin applies it, it rebuilds
//! the snapshot; an unchanged pass sends nothing; a worn table starts again.

use std::sync::Arc;

use super::*;
use crate::plugins::tests::{snapshot, task};

/// A plugin's table and queue, kept as the SDK keeps them: the queue as
/// (id, name, project) with text resolved.
#[derive(Default)]
struct Plugin {
    generation: u64,
    strings: Vec<String>,
    queue: Vec<(i64, String, String)>,
    usage: Vec<(String, u32, i64, i64)>,
}

impl Plugin {
    fn apply(&mut self, c: &w::Snapshot) {
        if c.base == 0 {
            *self = Plugin::default();
        }
        assert_eq!(c.base, self.generation, "sent a change from what it holds");
        let mut start = 0;
        for &end in &c.strings.ends {
            self.strings
                .push(c.strings.chars[start..end as usize].to_string());
            start = end as usize;
        }
        let text = |i: u32| self.strings[i as usize].clone();
        let q = &c.queue.added;
        let added: Vec<_> = (0..q.id.len())
            .map(|i| (q.id[i], text(q.name[i]), text(q.project[i])))
            .collect();
        let e = Edit {
            removed: c.queue.edit.removed.clone(),
            added_at: c.queue.edit.added_at.clone(),
        };
        self.queue = diff::apply(&self.queue, &e, &added).expect("the edit fits");
        let u = &c.usage.added;
        let added: Vec<_> = (0..u.project.len())
            .map(|i| {
                (
                    text(u.project[i]),
                    u.gpus[i],
                    u.started_at[i],
                    u.ended_at[i],
                )
            })
            .collect();
        let e = Edit {
            removed: c.usage.edit.removed.clone(),
            added_at: c.usage.edit.added_at.clone(),
        };
        self.usage = diff::apply(&self.usage, &e, &added).expect("the usage edit fits");
        assert_eq!(self.strings[c.time_zone as usize], "UTC");
        self.generation = c.generation;
    }

    fn holds(&self, s: &p::Snapshot) {
        let want: Vec<_> = s
            .queue
            .iter()
            .map(|t| (t.id, t.name.to_string(), t.project.to_string()))
            .collect();
        assert_eq!(self.queue, want);
        let want: Vec<_> = s
            .usage
            .iter()
            .map(|u| {
                (
                    s.project(u).to_string(),
                    u.gpus,
                    u.started_at,
                    u.ended_at.unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(self.usage, want);
    }
}

fn usage(s: &mut p::Snapshot, project: &str, started_at: i64, ended_at: Option<i64>) -> p::Usage {
    crate::plugins::tests::used(s, project, 1, started_at, ended_at)
}

/// Sends `s` to `plugin` from `held`, checks what it then holds, and
/// returns what the host now records.
fn send(plugin: &mut Plugin, held: Option<&Held>, s: p::Snapshot) -> (Arc<Held>, w::Snapshot) {
    let s = Arc::new(s);
    let c = change(held, &s, Kind::Incremental).unwrap();
    let Wire::Incremental(wire) = c.wire else {
        panic!("an incremental change in the delta form")
    };
    plugin.apply(&wire);
    plugin.holds(&s);
    (c.held, wire)
}

#[test]
fn a_series_of_passes_is_rebuilt_exactly_by_the_changes() {
    let mut plugin = Plugin::default();
    let mut s = snapshot(
        (1..=50)
            .map(|i| task(i, "vision", p::Priority::Normal, i))
            .collect(),
    );
    let rows = vec![
        usage(&mut s, "vision", 1, Some(2)),
        usage(&mut s, "bio", 3, None),
    ];
    s.usage = rows.into();
    let (mut held, first) = send(&mut plugin, None, s.clone());
    assert_eq!(first.base, 0);
    assert_eq!(first.queue.added.id.len(), 50);
    for round in 0..20i64 {
        // Two start, one arrives urgent, one changes priority, a run ends
        // and another starts; the oldest run leaves the window.
        s.queue.drain(0..2);
        s.queue.insert(
            0,
            task(100 + round, "bio", p::Priority::Urgent, 1000 + round),
        );
        if let Some(t) = s.queue.get_mut(10) {
            t.priority = p::Priority::High;
        }
        s.queue
            .sort_by_key(|t| (std::cmp::Reverse(t.priority), t.submitted_at, t.id));
        let mut used = s.usage.to_vec();
        used.retain(|u| u.started_at > round);
        if let Some(u) = used.last_mut() {
            u.ended_at = Some(round + 5);
        }
        used.push(usage(&mut s, "bio", round + 4, None));
        s.usage = used.into();
        s.now += 1;
        let (next, c) = send(&mut plugin, Some(&held), s.clone());
        assert_eq!(c.base, held.generation, "a change, not the whole snapshot");
        assert!(c.queue.added.id.len() <= 3, "{:?}", c.queue.added.id);
        held = next;
    }
}

#[test]
fn an_unchanged_pass_sends_no_task_and_no_string() {
    let s = snapshot(
        (1..=100)
            .map(|i| task(i, "vision", p::Priority::Low, i))
            .collect(),
    );
    let mut plugin = Plugin::default();
    let (held, _) = send(&mut plugin, None, s.clone());
    // The same content in a new allocation, as the daemon reads it each pass.
    let (next, c) = send(&mut plugin, Some(&held), s.clone());
    assert!(c.queue.edit.removed.is_empty() && c.queue.added.id.is_empty());
    assert!(
        c.strings.ends.is_empty(),
        "every string is held: {:?}",
        c.strings
    );
    assert!(
        Arc::ptr_eq(&held.rows, &next.rows),
        "an unchanged queue's rows are shared, not built again"
    );
    // One number of one task changed (a retry): that task alone is sent
    // again, though nothing else moved and the queue's length is the same.
    let mut retried = s.clone();
    retried.queue[40].attempts += 1;
    let (_, c) = send(&mut plugin, Some(&next), retried);
    assert_eq!(
        (
            c.queue.edit.removed,
            c.queue.edit.added_at,
            c.queue.added.id
        ),
        (vec![40], vec![40], vec![41])
    );
}

#[test]
fn a_table_worn_by_departed_names_starts_again_from_nothing() {
    let mut plugin = Plugin::default();
    let mut held: Option<Arc<Held>> = None;
    let mut froms_nothing = 0;
    for round in 0..100i64 {
        // A queue of 100 that is entirely new each pass: 100 names left behind.
        let s = snapshot(
            (0..100)
                .map(|i| task(round * 100 + i, "p", p::Priority::Low, round * 100 + i))
                .collect(),
        );
        let (h, c) = send(&mut plugin, held.as_deref(), s);
        froms_nothing += usize::from(c.base == 0);
        assert!(plugin.strings.len() <= 2 * (100 + 8) + SLACK_STRINGS + 200);
        held = Some(h);
    }
    assert!(
        froms_nothing >= 2,
        "the table was reset {froms_nothing} times"
    );
}

/// Queues in and out of the host's order, each sent twice (the second
/// time unchanged, its rows shared) or changed a little: whatever the
/// held queue's order, the plugin ends each pass holding the queue sent.
#[test]
fn queues_in_or_out_of_order_sent_again_unchanged_or_changed_are_held_exactly() {
    let mut plugin = Plugin::default();
    let mut held: Option<Arc<Held>> = None;
    let mut seed = 3u64;
    let mut next = |below: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % below
    };
    let mut s = snapshot(
        (1..=30)
            .map(|i| task(i, "p", p::Priority::Normal, i))
            .collect(),
    );
    for round in 0..200 {
        match next(5) {
            0 => s.queue.reverse(),
            1 => s.queue.swap(0, next(30) as usize),
            2 => s.queue[next(30) as usize].attempts += 1,
            3 => s.queue.sort_by_key(|t| (t.submitted_at, t.id)),
            _ => {}
        }
        let (h, _) = send(&mut plugin, held.as_deref(), s.clone());
        let (again, c) = send(&mut plugin, Some(&h), s.clone());
        assert!(c.queue.edit.removed.is_empty() && c.queue.added.id.is_empty());
        assert!(Arc::ptr_eq(&h.rows, &again.rows), "round {round}");
        held = Some(again);
    }
}

/// The daemon builds each pass's table of projects afresh (in the order
/// the rows name them), the simulator keeps one: rows under another table
/// are the same when their names are, and a row that names another project
/// at the same position is not.
#[test]
fn usage_rows_under_another_table_compare_by_project_name() {
    let mut plugin = Plugin::default();
    let mut s = snapshot(Vec::new());
    let rows = vec![
        usage(&mut s, "vision", 1, Some(2)),
        usage(&mut s, "bio", 3, Some(4)),
    ];
    s.usage = rows.into();
    let (held, _) = send(&mut plugin, None, s.clone());
    // The very list and table handed on, or the same rows in a new list.
    let (held, c) = send(&mut plugin, Some(&held), s.clone());
    assert!(c.usage.edit.removed.is_empty() && c.usage.edit.added_at.is_empty());
    let mut copied = s.clone();
    copied.usage = s.usage.to_vec().into();
    let (held, c) = send(&mut plugin, Some(&held), copied);
    assert!(c.usage.edit.removed.is_empty() && c.usage.edit.added_at.is_empty());
    // The same runs, the table in the other order.
    let mut other = s.clone();
    other.projects = vec![Arc::from("bio"), Arc::from("vision")].into();
    other.usage = s
        .usage
        .iter()
        .map(|u| p::Usage {
            project: 1 - u.project,
            ..*u
        })
        .collect();
    let (held, c) = send(&mut plugin, Some(&held), other.clone());
    assert!(
        c.usage.edit.removed.is_empty() && c.usage.edit.added_at.is_empty(),
        "{:?}",
        c.usage.edit
    );
    // Position 0 of another table names another project: that run changed.
    let mut renamed = other.clone();
    renamed.projects = vec![Arc::from("nlp"), Arc::from("vision")].into();
    let (_, c) = send(&mut plugin, Some(&held), renamed);
    assert_eq!(
        (c.usage.edit.removed, c.usage.edit.added_at),
        (vec![1], vec![1])
    );
    assert_eq!(plugin.usage[1].0, "nlp");
}
