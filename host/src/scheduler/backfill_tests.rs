//! The EASY rule with a simulated clock.

use super::*;
use crate::scheduler::simulate::{SimTask, mixed_workload, simulate};
use crate::scheduler::{PoolGpu, Stagger};

const NOW: i64 = 1_000_000;

fn pool(n: u32) -> Pool {
    Pool {
        slots: 64,
        gpus: (0..n).map(PoolGpu::unmonitored).collect(),
        cpus: vec![],
        share: false,
        policy_closed: Default::default(),
        stagger: Stagger::default(),
    }
}

fn gpus(n: u32) -> Resources {
    Resources {
        gpus: n,
        ..Default::default()
    }
}

/// `pool` with runs holding `held` GPUs each, ending at the given times.
fn with_runs(pool: &mut Pool, runs: &[(i64, u32, Option<i64>)]) -> Vec<RunningRun> {
    runs.iter()
        .map(|&(run, n, end)| RunningRun {
            run,
            placement: pool.place(&gpus(n)).expect("room for the run"),
            end,
        })
        .collect()
}

#[test]
fn the_head_reserves_the_end_of_the_runs_it_needs_and_a_short_job_ends_before_it() {
    // 4 GPUs: run 17 on GPU 0 ends at +100 s, run 18 on GPU 1 at +300 s.
    let mut p = pool(4);
    let runs = with_runs(
        &mut p,
        &[(17, 1, Some(NOW + 100_000)), (18, 1, Some(NOW + 300_000))],
    );
    let mut easy = Easy::new(Mode::Easy, NOW, runs);
    let Decision::Reserved(r) = easy.decide(&mut p, 1, &gpus(4), None, Some(3_600_000)) else {
        panic!("the 4-GPU job does not fit now: it gets the reservation");
    };
    assert_eq!(r.start, Some(NOW + 300_000));
    assert_eq!(r.after, vec![17, 18]);
    assert_eq!(r.gpus, vec![0, 1, 2, 3]);
    // Ends at +400 s, after the head's start: not started.
    assert_eq!(
        easy.decide(&mut p, 2, &gpus(1), None, Some(400_000)),
        Decision::Held(Behind::WouldDelay {
            head: 1,
            start: Some(NOW + 300_000),
            estimate: Some(400_000)
        })
    );
    // No estimate: it might run for ever, so it is not started either.
    assert!(matches!(
        easy.decide(&mut p, 3, &gpus(1), None, None),
        Decision::Held(_)
    ));
    // Ends at +200 s: started, and says why.
    match easy.decide(&mut p, 4, &gpus(1), None, Some(200_000)) {
        Decision::Start(pl, Some(Backfilled::EndsBefore { end, head, start })) => {
            assert_eq!((end, head, start), (NOW + 200_000, 1, NOW + 300_000));
            assert_eq!(pl.gpus, vec![2]);
        }
        other => panic!("{other:?}"),
    }
    // Exactly at the head's start is still before it.
    assert!(matches!(
        easy.decide(&mut p, 5, &gpus(1), None, Some(300_000)),
        Decision::Start(_, Some(Backfilled::EndsBefore { .. }))
    ));
    assert!(
        matches!(
            easy.decide(&mut p, 6, &gpus(1), None, Some(1)),
            Decision::NoFit
        ),
        "no GPU left"
    );
}

#[test]
fn a_long_job_may_use_a_gpu_the_head_will_not_need_at_its_start() {
    // 8 GPUs: run 30 holds 0-2 until +100 s, run 31 holds 3-6 with no
    // estimate; GPU 7 is free. The 3-GPU head will take 0-2 at +100 s.
    let mut p = pool(8);
    let runs = with_runs(&mut p, &[(30, 3, Some(NOW + 100_000)), (31, 4, None)]);
    let mut easy = Easy::new(Mode::Easy, NOW, runs);
    let Decision::Reserved(r) = easy.decide(&mut p, 1, &gpus(3), None, None) else {
        panic!("reserved");
    };
    assert_eq!(
        (r.start, r.gpus.clone()),
        (Some(NOW + 100_000), vec![0, 1, 2])
    );
    match easy.decide(&mut p, 2, &gpus(1), None, None) {
        Decision::Start(pl, Some(Backfilled::Beside { head: 1 })) => assert_eq!(pl.gpus, vec![7]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_run_without_estimate_makes_the_start_unknown_and_nothing_starts_for_being_short() {
    let mut p = pool(2);
    let runs = with_runs(&mut p, &[(40, 1, None)]);
    let mut easy = Easy::new(Mode::Easy, NOW, runs);
    let Decision::Reserved(r) = easy.decide(&mut p, 1, &gpus(2), None, None) else {
        panic!("reserved");
    };
    assert_eq!((r.start, r.unknown.clone()), (None, vec![40]));
    assert!(
        matches!(
            easy.decide(&mut p, 2, &gpus(1), None, Some(1_000)),
            Decision::Held(Behind::WouldDelay { start: None, .. })
        ),
        "even a one-second job could delay a head whose start is unknown"
    );
    assert_eq!(
        p.gpus.iter().filter(|g| g.users > 0).count(),
        1,
        "nothing taken"
    );
}

#[test]
fn without_backfill_or_for_a_task_that_never_fits_later_tasks_pass_it() {
    let mut p = pool(2);
    let runs = with_runs(&mut p, &[(50, 1, Some(NOW + 10))]);
    let mut strict = Easy::new(Mode::Strict, NOW, runs.clone());
    let mut q = p.clone();
    assert!(matches!(
        strict.decide(&mut q, 1, &gpus(2), None, None),
        Decision::Reserved(_)
    ));
    assert!(
        matches!(
            strict.decide(&mut q, 2, &gpus(1), None, Some(1)),
            Decision::Held(_)
        ),
        "strict order: nothing passes the head"
    );
    let mut off = Easy::new(Mode::PassOver, NOW, runs.clone());
    assert_eq!(
        off.decide(&mut p.clone(), 1, &gpus(2), None, None),
        Decision::NoFit
    );
    let mut on = Easy::new(Mode::Easy, NOW, runs);
    assert_eq!(
        on.decide(&mut p, 1, &gpus(3), None, None),
        Decision::NoFit,
        "3 GPUs on a 2-GPU machine: no reservation that would hold everything for ever"
    );
    assert!(matches!(
        on.decide(&mut p, 2, &gpus(1), None, None),
        Decision::Start(_, None)
    ));
}

#[test]
fn runs_started_earlier_in_the_pass_count_with_their_estimates() {
    let mut p = pool(2);
    let mut easy = Easy::new(Mode::Easy, NOW, Vec::new());
    assert!(matches!(
        easy.decide(&mut p, 1, &gpus(1), None, Some(50_000)),
        Decision::Start(..)
    ));
    easy.started(1, 99);
    let Decision::Reserved(r) = easy.decide(&mut p, 2, &gpus(2), None, None) else {
        panic!("reserved");
    };
    assert_eq!((r.start, r.after), (Some(NOW + 50_000), vec![99]));
}

#[test]
fn over_a_mixed_workload_the_big_jobs_never_start_after_their_reservation() {
    // A backlog (a night's queue, one task every 30 s) and a stream (one
    // every 5 min, about 90% of what 8 GPUs do).
    let backlog = mixed_workload(200, 10, 30_000, 7);
    let stream = mixed_workload(200, 10, 5 * 60_000, 7);
    for tasks in [&backlog, &stream] {
        let r = simulate(8, tasks, Mode::Easy);
        assert_eq!(r.starts.len(), tasks.len(), "every task ran");
        assert!(!r.reserved.is_empty(), "some big job had to wait");
        assert!(r.backfilled > 0, "small jobs filled the gaps");
        for (task, promised) in &r.reserved {
            assert!(
                r.starts[task] <= *promised,
                "task {task} started at {} after its reservation {promised}",
                r.starts[task]
            );
        }
    }
    // Against strict order (the head holds everything behind it), backfill
    // keeps the GPUs busier.
    let (easy, strict) = (
        simulate(8, &backlog, Mode::Easy),
        simulate(8, &backlog, Mode::Strict),
    );
    assert!(
        easy.utilisation(8) > strict.utilisation(8),
        "backfill {} vs strict order {}",
        easy.utilisation(8),
        strict.utilisation(8)
    );
    // Passed over, the big jobs of the stream wait behind the small ones.
    let big: Vec<&SimTask> = stream.iter().filter(|t| t.gpus == 4).collect();
    let longest = |r: &crate::scheduler::simulate::SimResult| {
        big.iter()
            .map(|t| r.starts[&t.id] - t.submit_at)
            .max()
            .unwrap_or(0)
    };
    let (easy, pass_over) = (
        simulate(8, &stream, Mode::Easy),
        simulate(8, &stream, Mode::PassOver),
    );
    assert!(
        longest(&easy) < longest(&pass_over),
        "the longest wait of a 4-GPU job: {} with backfill, {} passed over",
        longest(&easy),
        longest(&pass_over)
    );
}

#[test]
fn a_backfill_that_would_delay_the_head_leaves_the_heads_pool_exactly_as_it_was() {
    // Shared GPUs with memory: GPU 0 has a 10 GiB run and is not exclusive.
    // Taking a whole-GPU placement then giving it back would leave it marked
    // exclusive (its earlier user is still there); the undo must not.
    let mut p = Pool {
        share: true,
        cpus: vec![0, 1, 2, 3],
        gpus: (0..2)
            .map(|i| PoolGpu {
                mem_total: Some(80 << 30),
                ..PoolGpu::unmonitored(i)
            })
            .collect(),
        ..pool(0)
    };
    let shared = Resources {
        gpus: 1,
        gpu_mem: Some(bytesize::ByteSize::gib(10)),
        ..Default::default()
    };
    p.place(&shared).expect("room for the shared run");
    let before = p.clone();
    let whole = Placement {
        gpus: vec![0, 1],
        uuids: vec![String::new(), String::new()],
        gpu_mem: None,
        exclusive: true,
        cpus: vec![1, 3],
    };
    let taken = Taken::take(&mut p, &whole);
    assert!(p.gpus.iter().all(|g| g.exclusive), "taken as held whole");
    assert_eq!(p.cpus, vec![0, 2]);
    taken.undo(&mut p);
    assert_eq!(
        p, before,
        "slots, cores and every GPU's users, memory and exclusivity restored"
    );
}
