//! `report [RUNS]`: `nightjar report --since 30d` end to end through the
//! CLI over a database of RUNS (100,000) finished runs spread over the last
//! 30 days, in 10 projects and 200 task names (5% of tasks retried once),
//! each with its GPU records and a GPU series of 10 samples per GPU per
//! run (the daemon keeps one every `series_every`, 10 s: a real month would
//! hold more; 10 per GPU is a bounded stand-in that still puts ~1.3
//! million rows in `run_gpu_series`), a 6 KB start manifest per run and
//! an output manifest on every other one, and started/finished events. The
//! database is written with rusqlite into a state dir the daemon then
//! opens. Against, in the same run: `nightjar ls` on the same daemon, and
//! what a script would do first, reading the period's runs with their
//! tasks in one SQL statement through the runs table (rusqlite, this
//! process, warm page cache).

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use rusqlite::params;

use super::vs::nightjar;
use super::{Daemon, entries, median};

const DAY: i64 = 86_400_000;
const GPU_COUNTS: [u32; 10] = [0, 0, 1, 1, 1, 1, 1, 2, 2, 4];
const CLASSES: [&str; 20] = [
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "ok",
    "app-error",
    "app-error",
    "gpu-oom",
    "timeout",
];

/// A small deterministic generator (no seed to remember).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A run's start manifest as the daemon stores it, in a Python
/// environment of 150 packages: about 6 KB, as real ones are (the report's
/// columns come after it in the row).
fn run_manifest() -> String {
    let packages: Vec<String> = (0..150)
        .map(|i| format!("package-{i:03}==1.{i}.0"))
        .collect();
    serde_json::json!({
        "format": "nightjar.manifest.v1", "phase": "start", "captured_at": 0, "capture_ms": 31,
        "command": ["python", "train.py", "--lr", "0.01"], "workdir": "/home/lab/exp",
        "env": {"CUDA_VISIBLE_DEVICES": "0", "HOME": "/home/lab", "LANG": "C.UTF-8", "PATH": "/usr/local/bin:/usr/bin:/bin",
                "NIGHTJAR_PROJECT": "lab-1", "NIGHTJAR_TASK_NAME": "exp-001", "NIGHTJAR_WORKDIR": "/home/lab/exp"},
        "git": {"repo": "/home/lab/exp", "commit": "0123456789abcdef0123456789abcdef01234567", "branch": "main",
                "remote": "git@example.org:lab/exp.git", "dirty": true, "changed_files": ["train.py"],
                "diff_sha256": "ab".repeat(32), "diff_bytes": 812},
        "inputs": (0..5).map(|i| serde_json::json!({"path": format!("/data/set-{i}.h5"), "size": 1_000_000_000u64, "sha256": "cd".repeat(32)})).collect::<Vec<_>>(),
        "python": {"executable": "/home/lab/.venv/bin/python", "version": "3.11.8", "packages": packages, "source": "pip freeze"},
        "system": {"hostname": "gpu-1", "kernel": "Linux 6.8.0 x86_64", "nightjar": "0.2.0"},
        "gpus": {"driver": "550.54", "cuda": "12.4", "devices": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-0"}]},
    })
    .to_string()
}

/// An output manifest of 10 files (every other run has outputs).
fn run_outputs() -> String {
    let files: Vec<_> = (0..10)
        .map(|i| serde_json::json!({"path": format!("checkpoints/epoch-{i}.pt"), "size": 400_000_000u64, "sha256": "ef".repeat(32)}))
        .collect();
    serde_json::json!({"folder": "/scratch/out", "files": files}).to_string()
}

/// Writes `runs` finished runs ending in the 30 days before `now`.
fn fill(state: &Path, runs: usize, now: i64) -> Result<()> {
    let db = state.join("nightjar.db");
    drop(nightjar::store::Store::open(&db)?);
    let mut conn = rusqlite::Connection::open(&db)?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    // Each task row is written after its runs (its state is their outcome).
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    let spec = serde_json::to_string(
        &entries("command = \"python train.py --lr 0.01\"\n")?[0].members[0],
    )?;
    let (manifest, outputs) = (run_manifest(), run_outputs());
    let tx = conn.transaction()?;
    {
        let mut task = tx.prepare(
            "INSERT INTO tasks (id, kind, name, project, priority, state, spec, submitted_at, eligible_at, attempts, finished_at)
             VALUES (?1, 'task', ?2, ?3, 0, ?4, ?5, ?6, ?6, ?7, ?8)",
        )?;
        let mut run = tx.prepare(
            "INSERT INTO runs (id, task_id, attempt, state, run_dir, submitted_at, eligible_at, started_at, finished_at,
                               exit_code, class, gpus, energy_j, energy_source, cost, currency, manifest, outputs)
             VALUES (?1, ?2, ?3, 'finished', '', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 'EUR', ?14, ?15)",
        )?;
        let mut gpu = tx.prepare(
            "INSERT INTO run_gpus (run_id, gpu, uuid, samples, mem_peak, util_mean, util_max, temp_max, energy_j, energy_source)
             VALUES (?1, ?2, ?3, 10, 40000000000, 70.0, 99, 70, ?4, 'counter')",
        )?;
        let mut series = tx.prepare(
            "INSERT INTO run_gpu_series (run_id, at, gpu, util, mem, temp, power_mw) VALUES (?1, ?2, ?3, ?4, 40000000000, 65, 250000)",
        )?;
        let mut event = tx.prepare(
            "INSERT INTO events (at, task_id, run_id, kind, message) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut rng = Rng(42);
        let (mut run_id, mut task_id) = (0i64, 0i64);
        while (run_id as usize) < runs {
            task_id += 1;
            let name = format!("exp-{:03}", rng.below(200));
            let project = format!("lab-{}", rng.below(10));
            let attempts = if rng.below(20) == 0 { 2 } else { 1 };
            let submitted = now - 30 * DAY + rng.below(30 * DAY as u64 - 6 * 3_600_000) as i64;
            let mut ready = submitted;
            let mut end = submitted;
            let mut class = "ok";
            for attempt in 1..=attempts {
                run_id += 1;
                let start = ready + rng.below(2 * 3_600_000) as i64;
                let dur = 300_000 + rng.below(4 * 3_600_000) as i64;
                end = start + dur;
                let n = GPU_COUNTS[rng.below(10) as usize];
                class = if attempt < attempts {
                    "gpu-oom"
                } else {
                    CLASSES[rng.below(20) as usize]
                };
                let base = rng.below(8) as u32;
                let gpus: Vec<String> = (0..n).map(|i| ((base + i) % 8).to_string()).collect();
                let watts = if n == 0 { 10.0 } else { 250.0 * n as f64 };
                let joules = watts * dur as f64 / 1000.0;
                run.execute(params![
                    run_id,
                    task_id,
                    attempt,
                    submitted,
                    ready,
                    start,
                    end,
                    i32::from(class != "ok"),
                    class,
                    (n > 0).then(|| gpus.join(",")),
                    joules,
                    if n == 0 { "estimate" } else { "counter" },
                    joules / 3.6e6 * 0.3,
                    manifest,
                    (run_id % 2 == 0).then_some(outputs.as_str()),
                ])?;
                for g in &gpus {
                    gpu.execute(params![
                        run_id,
                        g.parse::<i64>()?,
                        format!("GPU-{g}"),
                        joules / n as f64
                    ])?;
                    for k in 0..10 {
                        series.execute(params![
                            run_id,
                            start + dur * k / 10,
                            g.parse::<i64>()?,
                            rng.below(101) as i64
                        ])?;
                    }
                }
                event.execute(params![
                    start,
                    task_id,
                    run_id,
                    "started",
                    format!("attempt {attempt}")
                ])?;
                event.execute(params![end, task_id, run_id, "finished", class])?;
                ready = end + 10_000;
            }
            let state = if class == "ok" { "succeeded" } else { "failed" };
            task.execute(params![
                task_id, name, project, state, spec, submitted, attempts, end
            ])?;
        }
    }
    tx.commit()?;
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
    Ok(())
}

/// Median wall time of `nightjar ARGS` over `n` calls, seconds.
fn timed(d: &Daemon, args: &[&str], n: usize) -> Result<f64> {
    let mut t = Vec::with_capacity(n);
    for _ in 0..n {
        let s = Instant::now();
        nightjar(d, args)?;
        t.push(s.elapsed().as_secs_f64());
    }
    Ok(median(&t))
}

pub fn report(runs: usize) -> Result<()> {
    println!("== report: `nightjar report --since 30d` over {runs} runs of the last 30 days ==");
    let now = nightjar_core::time::now_ms();
    let t0 = Instant::now();
    let d = Daemon::start_with(
        "timezone = \"UTC\"\n[tariff]\ncurrency = \"EUR\"\nprice = 0.3\n\
         [[tariff.windows]]\nfrom = \"23:00\"\nto = \"07:00\"\nprice = 0.12\n\
         [[tariff.windows]]\nfrom = \"17:00\"\nto = \"21:00\"\nprice = 0.45\ndays = [\"weekday\"]\n",
        |state| fill(state, runs, now),
    )?;
    let db = d.state.join("nightjar.db");
    let conn = rusqlite::Connection::open(&db)?;
    let count = |sql: &str| -> Result<i64> { Ok(conn.query_row(sql, [], |r| r.get(0))?) };
    println!(
        "  database: {} tasks, {} runs, {} GPU series rows, {} events, {:.0} MB (written in {:.1} s)",
        count("SELECT count(*) FROM tasks")?,
        count("SELECT count(*) FROM runs")?,
        count("SELECT count(*) FROM run_gpu_series")?,
        count("SELECT count(*) FROM events")?,
        std::fs::metadata(&db)?.len() as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    // Warm the page cache and the daemon once, as a second report would.
    nightjar(&d, &["report", "--since", "30d"])?;
    let reps = 5;
    let table = timed(&d, &["report", "--since", "30d"], reps)?;
    let json = timed(&d, &["--json", "report", "--since", "30d"], reps)?;
    let ls = timed(&d, &["ls"], reps)?;
    let mut floor = Vec::new();
    for _ in 0..reps {
        let s = Instant::now();
        let mut stmt = conn.prepare(
            "SELECT r.task_id, r.attempt, t.name, t.project, t.submitted_at, r.eligible_at, r.started_at,
                    r.finished_at, r.class, r.gpus, r.energy_j, r.energy_source, r.cost, r.currency
             FROM runs r INDEXED BY runs_finished JOIN tasks t ON t.id = r.task_id
             WHERE r.state = 'finished' AND r.finished_at >= ?1",
        )?;
        let mut rows = stmt.query(params![now - 30 * DAY])?;
        let mut n = 0u64;
        while let Some(r) = rows.next()? {
            n += r.get::<_, String>(2)?.len() as u64 + r.get::<_, String>(3)?.len() as u64;
        }
        std::hint::black_box(n);
        floor.push(s.elapsed().as_secs_f64());
    }
    let floor = median(&floor);
    println!(
        "  `nightjar report --since 30d` (table): {:.3} s median of {reps} (goal < 2 s: {})",
        table,
        if table < 2.0 { "met" } else { "NOT met" }
    );
    println!("  `nightjar --json report --since 30d`: {json:.3} s");
    println!(
        "  baselines: `nightjar ls` {:.3} s (report/ls {:.1}); one SQL read of the period's runs and tasks through the runs table {:.3} s (report/that {:.2})",
        ls,
        table / ls,
        floor,
        table / floor
    );
    Ok(())
}
