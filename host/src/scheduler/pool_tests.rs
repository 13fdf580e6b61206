//! The pool: placement, memory reservation, sharing, closures.

use super::*;
use bytesize::ByteSize;

fn gpu(index: u32, gib: u64) -> PoolGpu {
    PoolGpu {
        mem_total: Some(gib << 30),
        uuid: format!("GPU-{index}"),
        ..PoolGpu::unmonitored(index)
    }
}

fn pool(share: bool) -> Pool {
    Pool {
        slots: 4,
        gpus: vec![gpu(0, 80), gpu(1, 80)],
        cpus: vec![0, 1, 2, 3],
        share,
        policy_closed: Default::default(),
        stagger: Stagger::default(),
    }
}

fn res(gpus: u32, gib: Option<u64>) -> Resources {
    Resources {
        gpus,
        gpu_mem: gib.map(ByteSize::gib),
        ..Default::default()
    }
}

#[test]
fn whole_gpus_are_exclusive_until_given_back() {
    let mut p = pool(true);
    let a = p
        .place(&Resources {
            gpus: 2,
            cpus: Some(3),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(a.gpus, vec![0, 1]);
    assert_eq!(a.uuids, vec!["GPU-0", "GPU-1"]);
    assert_eq!(a.cpus, vec![0, 1, 2]);
    assert!(p.place(&res(1, Some(1))).is_none(), "held whole");
    assert!(
        p.place(&Resources {
            cpus: Some(2),
            ..Default::default()
        })
        .is_none()
    );
    assert_eq!(p.slots, 3, "a failed placement takes nothing");
    p.give_back(&a);
    assert_eq!(p, pool(true));
}

#[test]
fn sharing_reserves_memory_so_two_tasks_never_overcommit_a_gpu() {
    let mut p = pool(true);
    let a = p.place(&res(1, Some(50))).unwrap();
    let b = p.place(&res(1, Some(50))).unwrap();
    assert_eq!(
        (a.gpus[0], b.gpus[0]),
        (0, 1),
        "50 + 50 GiB does not fit one 80 GiB GPU"
    );
    let c = p.place(&res(1, Some(30))).unwrap();
    assert_eq!(c.gpus, vec![0], "30 GiB fits next to 50 GiB");
    assert!(p.place(&res(1, Some(31))).is_none());
    p.give_back(&a);
    assert!(p.place(&res(1, Some(31))).is_some());
}

#[test]
fn without_sharing_a_gpu_with_a_task_is_taken() {
    let mut p = pool(false);
    p.place(&res(1, Some(10))).unwrap();
    p.place(&res(1, Some(10))).unwrap();
    assert!(p.place(&res(1, Some(10))).is_none());
}

#[test]
fn foreign_memory_counts_as_taken_and_closed_gpus_get_nothing() {
    let mut p = pool(true);
    p.observe(0, Seen::foreign(true, 70 << 30));
    p.observe(1, Seen::foreign(false, 0));
    assert!(
        p.place(&res(1, Some(20))).is_none(),
        "GPU 0 has 10 GiB left, GPU 1 is closed"
    );
    assert!(
        p.place(&res(1, None)).is_none(),
        "a whole GPU needs no foreign memory on it"
    );
    assert_eq!(p.place(&res(1, Some(10))).unwrap().gpus, vec![0]);
}

#[test]
fn memory_a_run_uses_past_its_reservation_is_not_offered_again() {
    let mut p = pool(true);
    let a = p.place(&res(1, Some(20))).unwrap();
    let gpu = a.gpus[0];
    // The run reserved 20 GiB of 80 and uses 50: 30 GiB are left, not 60.
    p.observe(
        gpu,
        Seen {
            open: true,
            foreign: 0,
            used: 50 << 30,
        },
    );
    let free = p.gpus.iter().find(|g| g.index == gpu).unwrap().free_mem();
    assert_eq!(free, Some(30 << 30));
}

#[test]
fn a_gpu_oom_retry_takes_only_a_gpu_with_more_free_than_the_peak() {
    let mut p = pool(true);
    p.observe(0, Seen::foreign(true, 70 << 30));
    let peak = Some(20 << 30);
    assert_eq!(
        p.explain_after(&res(1, None), peak).gpus[0].unusable,
        Some(Unusable::InUse {
            runs: 0,
            foreign: 70 << 30
        })
    );
    let a = p.place_after(&res(1, Some(8)), peak).unwrap();
    assert_eq!(
        a.gpus,
        vec![1],
        "GPU 0 has 10 GiB free, under the 20 GiB peak"
    );
    p.observe(1, Seen::foreign(true, 61 << 30));
    assert_eq!(
        p.explain_after(&res(1, Some(8)), peak).gpus[1].unusable,
        Some(Unusable::BelowPeak {
            free: 11 << 30,
            peak: 20 << 30
        })
    );
    assert!(p.place_after(&res(1, Some(8)), peak).is_none());
    assert!(
        p.place(&res(1, Some(8))).is_some(),
        "without a peak it fits"
    );
}

#[test]
fn unmonitored_gpus_are_placed_by_index() {
    let mut p = Pool {
        slots: 2,
        gpus: vec![PoolGpu::unmonitored(3)],
        cpus: vec![],
        share: false,
        policy_closed: Default::default(),
        stagger: Stagger::default(),
    };
    assert_eq!(p.place(&res(1, Some(8))).unwrap().gpus, vec![3]);
    assert!(p.place(&res(1, None)).is_none());
}
