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
        queue: Some(abi::QueueChange {
            edit: abi::Edit { removed, added_at },
            added: Some(added),
        }),
        running: None,
        gpus: None,
        usage: None,
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
    short
        .queue
        .as_mut()
        .unwrap()
        .added
        .as_mut()
        .unwrap()
        .attempts
        .pop();
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
    c.queue.as_mut().unwrap().added.as_mut().unwrap().name = vec![0, 1, 99];
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
    c.usage = Some(abi::UsageChange {
        edit: abi::Edit {
            removed: vec![],
            added_at: vec![0],
        },
        added: Some(abi::Usage {
            project: vec![2],
            gpus: vec![],
            started_at: vec![],
            ended_at: vec![],
        }),
    });
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
    c.running = Some(running(vec![], vec![0], &[(9, 1, 2, &[0])]));
    k.apply(c).unwrap();
    let s = k.snapshot();
    assert_eq!(
        (s.time_zone, s.queue[0].name, s.queue[0].project),
        ("Europe/Paris", "n", "q")
    );
    assert_eq!((s.running[0].name, s.running[0].project), ("n", "q"));
}

/// A running-tasks change: `tasks` are (id, name, project, GPUs), high
/// priority, started at 0, preemptible.
fn running(
    removed: Vec<u32>,
    added_at: Vec<u32>,
    tasks: &[(i64, u32, u32, &[u32])],
) -> abi::RunningChange {
    abi::RunningChange {
        edit: abi::Edit { removed, added_at },
        added: tasks
            .iter()
            .map(|t| abi::RunningTask {
                id: t.0,
                name: t.1,
                project: t.2,
                priority: 2,
                started_at: 0,
                preemptible: true,
                gpu_count: t.3.len() as u32,
            })
            .collect(),
        gpu_index: tasks.iter().flat_map(|t| t.3.iter().copied()).collect(),
    }
}

/// A GPUs change: `gpus` are (index, temperature, closed by), named by
/// string 1.
fn gpus(removed: Vec<u32>, added_at: Vec<u32>, gpus: &[(u32, u32, &[u32])]) -> abi::GpuChange {
    abi::GpuChange {
        edit: abi::Edit { removed, added_at },
        added: gpus
            .iter()
            .map(|g| abi::Gpu {
                index: g.0,
                uuid: 1,
                name: 1,
                mem_total: 80,
                mem_used: 0,
                mem_reserved: 0,
                util: 0,
                temperature: g.1,
                power: 0,
                healthy: true,
                closed_count: g.2.len() as u32,
            })
            .collect(),
        closed_by: gpus.iter().flat_map(|g| g.2.iter().copied()).collect(),
    }
}

#[test]
fn running_tasks_and_gpus_follow_their_edits_and_a_part_left_out_is_kept() {
    let mut k = Kept::new();
    let mut c = change(
        0,
        1,
        &["UTC", "a", "p", "thermal"],
        vec![],
        vec![],
        queue(&[], 0, 0),
    );
    c.running = Some(running(
        vec![],
        vec![0, 1],
        &[(7, 1, 2, &[0, 1]), (8, 1, 2, &[2])],
    ));
    c.gpus = Some(gpus(
        vec![],
        vec![0, 1, 2],
        &[(0, 60, &[]), (1, 61, &[3]), (2, 40, &[])],
    ));
    k.apply(c).unwrap();
    let s = k.snapshot();
    assert_eq!(
        s.running
            .iter()
            .map(|r| (r.id, r.gpus.clone()))
            .collect::<Vec<_>>(),
        [(7, vec![0, 1]), (8, vec![2])]
    );
    assert_eq!(s.running[0].priority, Priority::High);
    assert_eq!(s.gpus[1].closed_by, ["thermal"]);
    assert_eq!(
        s.gpus.iter().map(|g| g.temperature).collect::<Vec<_>>(),
        [60, 61, 40]
    );
    // Nothing but the clock moved: every part left out, every part kept.
    let mut c = change(1, 2, &[], vec![], vec![], queue(&[], 0, 0));
    c.queue = None;
    c.now = 2_000;
    k.apply(c).unwrap();
    let s = k.snapshot();
    assert_eq!((s.now, s.running.len(), s.gpus.len()), (2_000, 2, 3));
    // Task 7 ends, task 9 starts on GPUs 0 and 1, GPU 1 cools and opens.
    let mut c = change(2, 3, &["b"], vec![], vec![], queue(&[], 0, 0));
    c.queue = None;
    c.running = Some(running(vec![0], vec![1], &[(9, 4, 2, &[0, 1])]));
    c.gpus = Some(gpus(vec![1], vec![1], &[(1, 45, &[])]));
    k.apply(c).unwrap();
    let s = k.snapshot();
    assert_eq!(
        s.running
            .iter()
            .map(|r| (r.id, r.name, r.gpus.clone()))
            .collect::<Vec<_>>(),
        [(8, "a", vec![2]), (9, "b", vec![0, 1])]
    );
    assert_eq!(
        s.gpus
            .iter()
            .map(|g| (g.index, g.temperature, g.closed_by.len()))
            .collect::<Vec<_>>(),
        [(0, 60, 0), (1, 45, 0), (2, 40, 0)]
    );
}

#[test]
fn flattened_lists_that_do_not_add_up_refuse_the_change() {
    let base = || {
        let mut c = change(
            0,
            1,
            &["UTC", "a", "p", "thermal"],
            vec![],
            vec![],
            queue(&[], 0, 0),
        );
        c.running = Some(running(vec![], vec![0], &[(7, 1, 2, &[0, 1])]));
        c.gpus = Some(gpus(vec![], vec![0], &[(0, 60, &[3])]));
        c
    };
    let mut k = Kept::new();
    k.apply(base()).unwrap();
    let mut more_gpus = base();
    more_gpus.running.as_mut().unwrap().gpu_index.push(2);
    let mut fewer_closers = base();
    fewer_closers.gpus.as_mut().unwrap().closed_by.clear();
    let mut huge_count = base();
    huge_count.running.as_mut().unwrap().added[0].gpu_count = u32::MAX;
    let mut no_queue_columns = base();
    no_queue_columns.queue = Some(abi::QueueChange {
        edit: abi::Edit {
            removed: vec![],
            added_at: vec![0],
        },
        added: None,
    });
    for (what, c) in [
        ("more GPU indices", more_gpus),
        ("fewer closers", fewer_closers),
        ("a huge count", huge_count),
        ("a task added with no columns", no_queue_columns),
    ] {
        assert_eq!(Kept::new().apply(c), Err(NotHeld), "{what}");
    }
}
