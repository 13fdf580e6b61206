//! The kept snapshot: changes applied in turn give the records the host
//! meant; a change from a base not held, or one whose edit does not fit,
//! leaves nothing held.

use super::*;
use crate::Priority;

fn strings(list: &[&str]) -> abi::Strings {
    let mut chars = String::new();
    let mut ends = Vec::new();
    for s in list {
        chars.push_str(s);
        ends.push(chars.len() as u32);
    }
    abi::Strings { chars, ends }
}

fn queue(ids: &[i64], name: u32, project: u32) -> abi::Queue {
    let n = ids.len();
    abi::Queue {
        id: ids.to_vec(),
        name: vec![name; n],
        project: vec![project; n],
        priority: vec![1; n],
        gpus: vec![1; n],
        gpu_mem: vec![0; n],
        submitted_at: ids.to_vec(),
        eligible_at: ids.to_vec(),
        attempts: vec![0; n],
        estimated_runtime: vec![600; n],
    }
}

fn change(
    base: u64,
    generation: u64,
    text: &[&str],
    removed: Vec<u32>,
    added_at: Vec<u32>,
    added: abi::Queue,
) -> abi::Snapshot {
    abi::Snapshot {
        generation,
        base,
        now: 1_000,
        time_zone: 0,
        utc_offset: 0,
        strings: strings(text),
        queue: abi::QueueChange {
            edit: abi::Edit { removed, added_at },
            added,
        },
        running: Vec::new(),
        gpus: Vec::new(),
        usage: abi::UsageChange {
            edit: abi::Edit {
                removed: vec![],
                added_at: vec![],
            },
            added: abi::Usage {
                project: vec![],
                gpus: vec![],
                started_at: vec![],
                ended_at: vec![],
            },
        },
    }
}

fn ids(k: &Kept) -> Vec<i64> {
    k.snapshot().queue.iter().map(|t| t.id).collect()
}

#[test]
fn changes_applied_in_turn_give_the_host_s_queue() {
    let mut k = Kept::new();
    k.apply(change(
        0,
        5,
        &["UTC", "t", "vision"],
        vec![],
        vec![0, 1, 2],
        queue(&[1, 2, 3], 1, 2),
    ))
    .unwrap();
    assert_eq!(ids(&k), [1, 2, 3]);
    let t = &k.snapshot().queue[0];
    assert_eq!(
        (t.name, t.project, t.priority),
        ("t", "vision", Priority::Normal)
    );
    assert_eq!(t.estimated_runtime, Some(600));
    assert_eq!(k.snapshot().time_zone, "UTC");
    // 1 starts; 4 arrives in front, in a string of its own; 5 at the end.
    k.apply(change(
        5,
        6,
        &["bio"],
        vec![0],
        vec![0, 3],
        queue(&[4, 5], 1, 3),
    ))
    .unwrap();
    assert_eq!(ids(&k), [4, 2, 3, 5]);
    assert_eq!(k.snapshot().queue[0].project, "bio", "the string added");
    assert_eq!(k.snapshot().queue[1].project, "vision", "a string kept");
    // Nothing changed: nothing sent.
    k.apply(change(6, 7, &[], vec![], vec![], queue(&[], 0, 0)))
        .unwrap();
    assert_eq!((ids(&k), k.generation()), (vec![4, 2, 3, 5], 7));
    // From nothing again: everything before forgotten.
    k.apply(change(
        0,
        8,
        &["Asia/Shanghai", "x"],
        vec![],
        vec![0],
        queue(&[9], 1, 1),
    ))
    .unwrap();
    assert_eq!(ids(&k), [9]);
    assert_eq!(k.snapshot().time_zone, "Asia/Shanghai");
}

#[test]
fn a_base_not_held_or_an_edit_that_does_not_fit_leaves_nothing_held() {
    let full = || {
        change(
            0,
            5,
            &["UTC", "t"],
            vec![],
            vec![0, 1],
            queue(&[1, 2], 1, 1),
        )
    };
    let mut k = Kept::new();
    k.apply(full()).unwrap();
    assert_eq!(
        k.apply(change(4, 6, &[], vec![], vec![], queue(&[], 0, 0))),
        Err(NotHeld)
    );
    assert_eq!((k.generation(), ids(&k)), (0, vec![]));
    let bad = [
        change(5, 6, &[], vec![2], vec![], queue(&[], 0, 0)),
        change(5, 6, &[], vec![1, 0], vec![], queue(&[], 0, 0)),
        change(5, 6, &[], vec![], vec![5], queue(&[3], 1, 1)),
        change(5, 6, &[], vec![], vec![0, 0], queue(&[3, 4], 1, 1)),
        change(5, 6, &[], vec![], vec![0], queue(&[3, 4], 1, 1)),
    ];
    for (i, c) in bad.into_iter().enumerate() {
        k.apply(full()).unwrap();
        assert_eq!(k.apply(c), Err(NotHeld), "edit {i}");
        assert_eq!((k.generation(), ids(&k)), (0, vec![]), "edit {i}");
    }
    let mut short = full();
    short.queue.added.attempts.pop();
    assert_eq!(Kept::new().apply(short), Err(NotHeld), "a short column");
}

#[test]
fn strings_out_of_range_or_inside_a_character_read_as_empty() {
    let mut k = Kept::new();
    let mut c = change(0, 1, &[], vec![], vec![0, 1, 2], queue(&[1, 2, 3], 0, 0));
    c.strings = abi::Strings {
        chars: "é".into(),
        ends: vec![1, 2],
    };
    c.queue.added.name = vec![0, 1, 99];
    k.apply(c).unwrap();
    let names: Vec<&str> = k.snapshot().queue.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        ["", "", ""],
        "inside é, from 1 to 2, and no such string"
    );
}

#[test]
fn a_change_refused_after_its_strings_and_queue_applied_leaves_nothing_then_reads_right() {
    let mut k = Kept::new();
    k.apply(change(
        0,
        5,
        &["UTC", "t", "p"],
        vec![],
        vec![0],
        queue(&[1], 1, 2),
    ))
    .unwrap();
    // Strings kept and a task added, then a usage column short.
    let mut c = change(5, 6, &["late"], vec![], vec![1], queue(&[2], 3, 2));
    c.usage.added.project = vec![2];
    assert_eq!(k.apply(c), Err(NotHeld));
    assert_eq!((k.generation(), ids(&k)), (0, vec![]));
    assert!(k.snapshot().time_zone.is_empty() && k.texts.is_empty() && k.chunks.is_empty());
    // Running tasks and GPUs name strings too: all read from the new table.
    let mut c = change(
        0,
        7,
        &["Europe/Paris", "n", "q"],
        vec![],
        vec![0],
        queue(&[3], 1, 2),
    );
    c.running.push(abi::RunningTask {
        id: 9,
        name: 1,
        project: 2,
        priority: Priority::High,
        gpus: vec![0],
        started_at: 0,
        preemptible: true,
    });
    k.apply(c).unwrap();
    let s = k.snapshot();
    assert_eq!(
        (s.time_zone, s.queue[0].name, s.queue[0].project),
        ("Europe/Paris", "n", "q")
    );
    assert_eq!((s.running[0].name, s.running[0].project), ("n", "q"));
}

/// What an edit should give, written plainly: `None` when it does not fit.
fn model(list: &[u32], removed: &[u32], added_at: &[u32], added: &[u32]) -> Option<Vec<u32>> {
    let up = |l: &[u32]| l.windows(2).all(|w| w[0] < w[1]);
    if !up(removed) || !up(added_at) || added.len() != added_at.len() {
        return None;
    }
    if removed.iter().any(|&r| r as usize >= list.len()) {
        return None;
    }
    let mut kept: Vec<u32> = (0..list.len())
        .filter(|i| !removed.contains(&(*i as u32)))
        .map(|i| list[i])
        .collect();
    let len = kept.len() + added.len();
    if added_at.iter().any(|&a| a as usize >= len) {
        return None;
    }
    for (&a, &x) in added_at.iter().zip(added) {
        kept.insert(a as usize, x);
    }
    Some(kept)
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }

    /// `n` positions below `below`: mostly ascending and distinct.
    fn positions(&mut self, n: u64, below: u64) -> Vec<u32> {
        let mut l: Vec<u32> = (0..n).map(|_| self.next(below) as u32).collect();
        if self.next(4) > 0 {
            l.sort();
            l.dedup();
        }
        l
    }
}

#[test]
fn any_edit_is_applied_exactly_or_refused_never_half_or_a_panic() {
    let mut r = Lcg(3);
    for _ in 0..20_000 {
        let list: Vec<u32> = (0..r.next(7) as u32).collect();
        let (n, m) = (r.next(4), r.next(4));
        let removed = r.positions(n, 8);
        let added_at = r.positions(m, 10);
        let extra = u32::from(r.next(5) == 0);
        let added: Vec<u32> = (0..added_at.len() as u32 + extra)
            .map(|i| 100 + i)
            .collect();
        let mut got = list.clone();
        let done = edit_list(&mut got, &removed, &added_at, added.iter().copied());
        let case = format!("{list:?} {removed:?} {added_at:?} {added:?}");
        match model(&list, &removed, &added_at, &added) {
            Some(want) => assert_eq!((done, got), (Ok(()), want), "{case}"),
            None => assert_eq!(done, Err(NotHeld), "{case}"),
        }
    }
}

/// The same edits on items that own memory (`cargo +nightly miri test -p
/// nightjar-sdk kept` checks that each is dropped exactly once, none read
/// after it moved): the list the model gives, and every item dropped or kept.
#[test]
fn edits_of_owning_items_drop_each_removed_one_once_and_keep_the_rest() {
    let mut r = Lcg(11);
    for _ in 0..if cfg!(miri) { 300 } else { 5_000 } {
        let list: Vec<u32> = (0..r.next(9) as u32).collect();
        let (n, m) = (r.next(5), r.next(5));
        let removed = r.positions(n, 10);
        let added_at = r.positions(m, 12);
        let added: Vec<u32> = (0..added_at.len() as u32).map(|i| 100 + i).collect();
        let mut got: Vec<String> = list.iter().map(|x| x.to_string()).collect();
        let done = edit_list(
            &mut got,
            &removed,
            &added_at,
            added.iter().map(|x| x.to_string()),
        );
        let want = model(&list, &removed, &added_at, &added)
            .map(|l| l.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        match want {
            Some(want) => assert_eq!((done, got), (Ok(()), want)),
            None => assert_eq!(done, Err(NotHeld)),
        }
    }
}
