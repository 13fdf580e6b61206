//! `backfill [SMALL]`: the mixed workload (SMALL 1-GPU tasks of 5-45 min and
//! one 4-GPU task of 1-2 h per 20), as a backlog (one arriving every 30 s)
//! and as a stream (one every 5 min: about 90% of what 8 GPUs can do), on 8 simulated
//! GPUs, driven by a simulated clock through the pure scheduler the daemon
//! uses (`nightjar::scheduler::backfill`), in one run: EASY backfill against
//! strict order (a task that does not fit holds everything behind it: the
//! baseline backfill improves on) and against passing big tasks over
//! (nightjar before backfill: `[scheduler] backfill = false`). Runtimes
//! are known (their timeouts), so a reservation is a promise the bench checks.

use anyhow::{Result, bail};
use nightjar::scheduler::backfill::Mode;
use nightjar::scheduler::simulate::{SimResult, mixed_workload, simulate};

const GPUS: u32 = 8;

pub fn backfill(small: usize) -> Result<()> {
    scenario(small, "backlog, one task every 30 s", 30_000)?;
    scenario(
        small,
        "stream, one task every 5 min (~90% load)",
        5 * 60_000,
    )
}

fn scenario(small: usize, what: &str, every_ms: i64) -> Result<()> {
    let big = (small / 20).max(1) as u32;
    let tasks = mixed_workload(small as u32, big, every_ms, 42);
    let t0 = std::time::Instant::now();
    let easy = simulate(GPUS, &tasks, Mode::Easy);
    let strict = simulate(GPUS, &tasks, Mode::Strict);
    let pass_over = simulate(GPUS, &tasks, Mode::PassOver);
    let took = t0.elapsed();
    let big_ids: Vec<&nightjar::scheduler::simulate::SimTask> =
        tasks.iter().filter(|t| t.gpus == 4).collect();
    let waits = |r: &SimResult| {
        let mut w: Vec<i64> = big_ids
            .iter()
            .map(|t| r.starts[&t.id] - t.submit_at)
            .collect();
        w.sort_unstable();
        (
            w.iter().sum::<i64>() as f64 / w.len().max(1) as f64 / 60_000.0,
            *w.last().unwrap_or(&0) as f64 / 60_000.0,
        )
    };
    let late: Vec<(i64, i64)> = easy
        .reserved
        .iter()
        .filter(|(t, at)| easy.starts[t] > **at)
        .map(|(t, at)| (*t, easy.starts[t] - at))
        .collect();
    println!(
        "backfill, {what}: {} tasks ({small} x 1 GPU 5-45 min, {big} x 4 GPUs 1-2 h) on {GPUS} simulated GPUs, simulated clock ({:.0} ms for the three runs)",
        tasks.len(),
        took.as_secs_f64() * 1000.0
    );
    for (name, r) in [
        ("EASY backfill", &easy),
        ("strict order (no backfill)", &strict),
        ("big tasks passed over", &pass_over),
    ] {
        let (mean, max) = waits(r);
        println!(
            "  {name:<28} GPU utilisation {:5.1}%  makespan {:6.1} h  4-GPU wait mean {mean:6.1} min, max {max:6.1} min  backfilled {}",
            r.utilisation(GPUS) * 100.0,
            r.makespan as f64 / 3_600_000.0,
            r.backfilled
        );
    }
    let big_reserved = big_ids
        .iter()
        .filter(|t| easy.reserved.contains_key(&t.id))
        .count();
    println!(
        "  utilisation EASY / strict: {:.3}x; starts after their reservation: {} of {} heads ({big_reserved} of the {} 4-GPU tasks had one)",
        easy.utilisation(GPUS) / strict.utilisation(GPUS).max(f64::MIN_POSITIVE),
        late.len(),
        easy.reserved.len(),
        big_ids.len()
    );
    if !late.is_empty() {
        bail!("4-GPU tasks started after their reservation: {late:?}");
    }
    Ok(())
}
