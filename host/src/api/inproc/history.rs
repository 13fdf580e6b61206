//! The daemon's own runs as a trace (`run-trace`: `report --trace`,
//! `simulate --history`): one job per run, arriving when it became
//! eligible, lasting as long as it ran, estimated by its timeout; and the
//! replay of that trace under the daemon's own config starts every run
//! when the daemon did.

use super::World;
use crate::api::RunTrace;
use crate::api::wire::TaskState;
use crate::daemon::sim::{Machine, Mode, Options, Trace, simulate};
use crate::daemon::testkit::T0;
use crate::store::RunClass;

/// (submitted at, s after T0; GPUs; timeout, min; runs for, s).
const WORK: [(i64, u32, i64, i64); 9] = [
    (0, 2, 60, 1_800),
    (0, 1, 30, 600),
    (10, 4, 120, 3_000),
    (20, 1, 20, 900),
    (30, 1, 10, 300),
    (40, 2, 45, 1_200),
    (600, 1, 5, 200),
    (700, 3, 30, 1_000),
    (900, 1, 60, 2_000),
];

/// Plays `WORK` on `w`: submits on time, ends each run after its length,
/// a pass after every event. The task ids, in `WORK`'s order.
fn play(w: &World) -> Vec<i64> {
    let mut ids: Vec<Option<i64>> = vec![None; WORK.len()];
    for _ in 0..100 {
        let now = w.fx.daemon.now_ms();
        let arrivals = WORK
            .iter()
            .enumerate()
            .filter(|(i, _)| ids[*i].is_none())
            .map(|(_, job)| T0 + job.0 * 1000);
        let ends = ids.iter().zip(WORK).filter_map(|(id, job)| {
            let id = (*id)?;
            (w.state(id) == TaskState::Running)
                .then(|| w.show(id).runs.last().map(|r| r.started_at + job.3 * 1000))
                .flatten()
        });
        let Some(next) = arrivals.chain(ends).min() else {
            return ids.into_iter().flatten().collect();
        };
        w.advance(next - now);
        for (i, job) in WORK.iter().enumerate() {
            if let Some(id) = ids[i] {
                let due = w.state(id) == TaskState::Running
                    && w.show(id).runs.last().map(|r| r.started_at + job.3 * 1000) == Some(next);
                if due {
                    w.end(id, RunClass::Ok, 0);
                }
            } else if T0 + job.0 * 1000 == next {
                let more = format!(
                    "resources = {{ gpus = {}, timeout = \"{}m\" }}",
                    job.1, job.2
                );
                ids[i] = Some(w.task(&format!("job-{i}"), &["true"], &more));
            }
        }
        w.pass();
    }
    panic!("the work did not end in 100 events");
}

#[test]
fn the_daemons_history_replayed_under_its_own_config_starts_every_run_when_it_did() {
    let w = World::new(
        "slots = 8\n[plugins]\nchain = []\n[gpu]\nbackend = \"sim:4xA100-80GB\"\nhost_mem_min_free = \"1MiB\"\n",
    );
    let ids = play(&w);
    let to = w.fx.daemon.now_ms() + 1;
    let rows = w.call(RunTrace { from: T0, to }).expect("run-trace");
    assert_eq!(rows.rows.len(), WORK.len(), "one row per run");
    assert_eq!((rows.running, rows.truncated), (0, false));
    let first = &rows.rows[0];
    assert_eq!(
        (first.task, first.gpus, first.timeout_ms),
        (ids[0], 2, Some(3_600_000))
    );
    assert_eq!(first.finished_at - first.started_at, 1_800_000);
    let csv = rows.csv();
    assert!(csv.starts_with("# nightjar trace: 9 runs"), "{csv}");
    let trace = Trace::parse("history", csv.as_bytes()).expect("the trace parses");
    let cfg = w.fx.daemon.cfg.clone();
    let opts = Options {
        machine: Machine {
            gpus: 4,
            gpu_mem: None,
            slots: cfg.slots,
            share: false,
        },
        order: Mode::Easy,
        start_ms: T0,
    };
    let sim = simulate(&cfg, &trace, opts).expect("simulates");
    assert!(sim.outcome.never.is_empty(), "{:?}", sim.outcome.never);
    let mut differ = Vec::new();
    for ran in &sim.outcome.runs {
        let job = &trace.jobs[ran.job];
        let real = rows.rows.iter().find(|r| r.run == job.id).expect("its row");
        if (ran.start, ran.end) != (real.started_at, real.finished_at) {
            differ.push((job.id, ran.start - T0, real.started_at - T0));
        }
    }
    assert!(
        differ.is_empty(),
        "(run, simulated start, real start): {differ:?}"
    );
    // Some run waited, so the replay had something to get right.
    assert!(rows.rows.iter().any(|r| r.started_at > r.eligible_at));
    // A period that ends before it starts is refused.
    assert!(w.call(RunTrace { from: to, to: T0 }).is_err());
}
