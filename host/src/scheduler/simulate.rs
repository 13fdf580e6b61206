//! A simulated clock driving the pure scheduler: tasks arrive, start in
//! order through [`Easy`] (the same code the daemon's passes use), and end
//! after their runtime. For the backfill tests and `scripts/bench backfill`.

use std::collections::BTreeMap;

use super::backfill::{Decision, Easy, Mode, RunningRun};
use super::{Pool, PoolGpu, Stagger};
use crate::task::model::Resources;

/// One task of a simulated workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimTask {
    /// Its id; lower ids rank first.
    pub id: i64,
    /// Whole GPUs it takes.
    pub gpus: u32,
    /// How long it really runs, ms.
    pub runtime: i64,
    /// What the scheduler expects, ms (`None`: no estimate).
    pub estimate: Option<i64>,
    /// When it is submitted (ms from the start).
    pub submit_at: i64,
}

/// What a simulation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimResult {
    /// Each task's start.
    pub starts: BTreeMap<i64, i64>,
    /// The first reservation each head was given (its expected start).
    pub reserved: BTreeMap<i64, i64>,
    /// Tasks started past a head.
    pub backfilled: u32,
    /// When the last task ended.
    pub makespan: i64,
    /// GPU-ms of work done.
    pub busy: i64,
}

impl SimResult {
    /// Busy GPU time over GPUs x makespan, in 0..=1.
    pub fn utilisation(&self, gpus: u32) -> f64 {
        if self.makespan == 0 {
            return 0.0;
        }
        self.busy as f64 / (gpus as f64 * self.makespan as f64)
    }
}

/// Runs `tasks` on `gpus` whole GPUs, a task that does not fit treated by `mode`.
pub fn simulate(gpus: u32, tasks: &[SimTask], mode: Mode) -> SimResult {
    let mut pool = Pool {
        slots: u32::MAX / 2,
        gpus: (0..gpus).map(PoolGpu::unmonitored).collect(),
        cpus: Vec::new(),
        share: false,
        policy_closed: Default::default(),
        stagger: Stagger::default(),
    };
    let mut waiting: Vec<&SimTask> = Vec::new();
    let mut pending: Vec<&SimTask> = tasks.iter().collect();
    pending.sort_by_key(|t| (t.submit_at, t.id));
    pending.reverse();
    // Running: (end, task, placement, expected end).
    let mut running: Vec<(i64, &SimTask, super::Placement, Option<i64>)> = Vec::new();
    let mut out = SimResult::default();
    let mut now = 0;
    loop {
        while pending.last().is_some_and(|t| t.submit_at <= now) {
            waiting.extend(pending.pop());
        }
        running.retain(|(end, t, p, _)| {
            if *end <= now {
                pool.give_back(p);
                out.makespan = out.makespan.max(*end);
                out.busy += t.runtime * t.gpus as i64;
                false
            } else {
                true
            }
        });
        waiting.sort_by_key(|t| t.id);
        let runs = running
            .iter()
            .map(|(_, t, p, exp)| RunningRun {
                run: t.id,
                placement: p.clone(),
                end: *exp,
            })
            .collect();
        let mut easy = Easy::new(mode, now, runs);
        let mut started = Vec::new();
        for &t in &waiting {
            let res = Resources {
                gpus: t.gpus,
                ..Default::default()
            };
            match easy.decide(&mut pool, t.id, &res, None, t.estimate) {
                Decision::Start(p, how) => {
                    out.backfilled += u32::from(how.is_some());
                    out.starts.insert(t.id, now);
                    let exp = t.estimate.map(|e| now + e);
                    running.push((now + t.runtime, t, p, exp));
                    started.push(t.id);
                }
                Decision::Reserved(r) => {
                    if let Some(s) = r.start {
                        out.reserved.entry(t.id).or_insert(s);
                    }
                }
                Decision::NoFit | Decision::Held(_) => {}
            }
        }
        waiting.retain(|t| !started.contains(&t.id));
        let next_end = running.iter().map(|(e, ..)| *e).min();
        let next_submit = pending.last().map(|t| t.submit_at);
        now = match (next_end, next_submit) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => break,
            },
        };
    }
    out
}

/// The bench's mixed workload: many 1-GPU short tasks (5-45 min) and a few
/// 4-GPU long ones (1-2 h) spread among them, one arriving every
/// `every_ms`, runtimes known (their timeouts), from a fixed seed. On 8
/// GPUs, one task every 5 min is about 90% of what they can do.
pub fn mixed_workload(small: u32, big: u32, every_ms: i64, seed: u64) -> Vec<SimTask> {
    let mut x = seed | 1;
    let mut rand = move |n: u64| {
        // xorshift64: the same workload for a seed, on every machine.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut tasks = Vec::new();
    let total = small + big;
    // The big ones spread evenly through the stream of small ones.
    let every = (total / big.max(1)).max(1);
    let mut bigs = 0;
    for i in 0..total {
        let is_big = bigs < big && i % every == every / 2;
        bigs += u32::from(is_big);
        let (gpus, runtime) = if is_big {
            (4, (60 + rand(60) as i64) * 60_000)
        } else {
            (1, (5 + rand(40) as i64) * 60_000)
        };
        tasks.push(SimTask {
            id: i as i64 + 1,
            gpus,
            runtime,
            estimate: Some(runtime),
            submit_at: (i as i64) * every_ms,
        });
    }
    tasks
}
