//! The simulator against an independent reference simulator
//! (`tests/support/sim_reference.py`, written from the documented rules),
//! job by job, on a trace of a few thousand jobs: strict, first fit and
//! EASY in the built-in order, and shortest-job-first given by the
//! `shortest-first` example component as the whole chain with first fit.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::*;

/// (start ms, end ms, GPUs) by job id.
type Schedule = BTreeMap<i64, (i64, i64, Vec<u32>)>;

/// A trace that loads 8 GPUs past what they can do for a while, so queues
/// form: 1 to 4 GPUs (a few 8), runtimes 1 min to 2 h, estimates off the
/// runtimes by up to half, priorities mostly normal.
fn busy_trace(jobs: u64) -> String {
    let mut csv = String::from("id,arrival_s,gpus,duration_s,estimate_s,priority\n");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut at = 0;
    for id in 1..=jobs {
        at += next(400);
        let gpus = match next(20) {
            0 => 8,
            n => 1 + n % 4,
        };
        let duration = 60 + next(7200);
        let estimate = (duration / 2 + next(duration)).max(1);
        let priority = ["low", "normal", "normal", "normal", "high"][next(5) as usize];
        csv += &format!("{id},{at},{gpus},{duration},{estimate},{priority}\n");
    }
    csv
}

fn reference(trace: &Path, gpus: u32, order: &str) -> Schedule {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/support/sim_reference.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(trace)
        .arg(gpus.to_string())
        .arg(order)
        .output()
        .expect("python3 runs the reference simulator");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let gpus = f[3]
                .split_whitespace()
                .map(|g| g.parse().unwrap())
                .collect();
            (
                f[0].parse().unwrap(),
                (f[1].parse().unwrap(), f[2].parse().unwrap(), gpus),
            )
        })
        .collect()
}

fn ours(cfg: &Config, trace: &Trace, gpus: u32, order: Mode) -> Schedule {
    let opts = Options {
        machine: Machine {
            gpus,
            gpu_mem: None,
            slots: u32::MAX / 2,
            share: false,
        },
        order,
        start_ms: 0,
    };
    let s = simulate(cfg, trace, opts).unwrap();
    assert!(s.outcome.never.is_empty(), "{:?}", s.outcome.never);
    s.outcome
        .runs
        .iter()
        .map(|r| (trace.jobs[r.job].id, (r.start, r.end, r.gpus.clone())))
        .collect()
}

/// The first job where the two differ, with both, or `None`.
fn first_difference(a: &Schedule, b: &Schedule) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("{} runs against {}", a.len(), b.len()));
    }
    // The earliest start where they part: later differences follow from it.
    a.iter()
        .zip(b.iter())
        .filter(|(x, y)| x != y)
        .min_by_key(|(x, y)| x.1.0.min(y.1.0))
        .map(|(x, y)| format!("ours {x:?}, reference {y:?}"))
}

#[test]
fn strict_first_fit_and_easy_match_the_reference_job_by_job() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.csv");
    std::fs::write(&path, busy_trace(3000)).unwrap();
    let trace = Trace::read(&path).unwrap();
    // No chain: the built-in order (the default chain's `priority` ages tasks).
    let cfg = Config::parse("[plugins]\nchain = []\n", Path::new("/t.toml")).unwrap();
    let mut differed = 0;
    for (mode, name) in [
        (Mode::Strict, "strict"),
        (Mode::PassOver, "first-fit"),
        (Mode::Easy, "easy"),
    ] {
        let got = ours(&cfg, &trace, 8, mode);
        assert_eq!(got.len(), 3000, "{name}");
        let want = reference(&path, 8, name);
        assert_eq!(first_difference(&got, &want), None, "{name}");
        differed += usize::from(name != "strict" && got != ours(&cfg, &trace, 8, Mode::Strict));
    }
    assert_eq!(
        differed, 2,
        "the trace is busy enough that the orders differ"
    );
}

#[test]
fn the_shortest_first_component_as_the_chain_gives_shortest_job_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.csv");
    std::fs::write(&path, busy_trace(2000)).unwrap();
    let trace = Trace::read(&path).unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(
        env!("NIGHTJAR_EXAMPLE_POLICY_SHORTEST_FIRST"),
        plugins.join("shortest-first.wasm"),
    )
    .unwrap();
    let cfg = Config::parse(
        &format!(
            "[plugins]\ndir = \"{}\"\nchain = [\"shortest-first\"]\n",
            plugins.display()
        ),
        Path::new("/t.toml"),
    )
    .unwrap();
    let got = ours(&cfg, &trace, 8, Mode::PassOver);
    let want = reference(&path, 8, "sjf");
    assert_eq!(first_difference(&got, &want), None);
    let fifo = reference(&path, 8, "first-fit");
    assert_ne!(
        got, fifo,
        "shortest first is not the arrival order on this trace"
    );
}
