//! A run's energy and cost when it ends: its share of its GPUs' energy
//! (from the monitor), or for a CPU-only run the CPU packages' RAPL
//! counters (read at its start and end, where readable) shared by its cores
//! out of the machine's online cores, else an estimate of
//! `tariff.cpu_watts_per_core` x its cores x its duration.

use std::path::Path;

use crate::config::RaplMode;
use crate::daemon::state::{Daemon, lock};
use crate::gpu::energy::RunEnergy;
use crate::store::RunRow;

/// Where the kernel lists the powercap zones.
pub const POWERCAP: &str = "/sys/class/powercap";

/// One RAPL package zone's counter: (microjoules, the counter's range).
pub type RaplReading = Vec<(u64, u64)>;

/// Reads every top-level `intel-rapl:N` zone's `energy_uj` and
/// `max_energy_range_uj` under `root`; none when there is no zone or one is
/// not readable (the counters are often root-only).
pub fn read_rapl(root: &Path) -> Option<RaplReading> {
    let mut zones: Vec<_> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.strip_prefix("intel-rapl:")
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    zones.sort();
    if zones.is_empty() {
        return None;
    }
    let read = |zone: &str, file: &str| -> Option<u64> {
        std::fs::read_to_string(root.join(zone).join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    zones
        .iter()
        .map(|z| Some((read(z, "energy_uj")?, read(z, "max_energy_range_uj")?)))
        .collect()
}

/// Joules between two readings of the same zones; a counter that went
/// down wrapped once at its range.
pub fn rapl_joules(start: &RaplReading, end: &RaplReading) -> Option<f64> {
    if start.len() != end.len() {
        return None;
    }
    let uj: u64 = start
        .iter()
        .zip(end)
        .map(|(&(a, max), &(b, _))| {
            if b >= a {
                b - a
            } else {
                b + max.saturating_sub(a)
            }
        })
        .sum();
    Some(uj as f64 / 1e6)
}

impl Daemon {
    /// Notes the RAPL counters at a CPU-only run's start (where readable).
    pub(in crate::daemon) fn note_rapl_start(&self, run: i64, gpus: bool) {
        if gpus || self.cfg.tariff.rapl == RaplMode::Off {
            return;
        }
        if let Some(r) = read_rapl(Path::new(POWERCAP)) {
            lock(&self.runs.rapl_start).insert(run, r);
        }
    }

    /// The energy and cost of an ended CPU-only run (none for GPU runs,
    /// whose energy comes from the monitor). `end`: when it ended, if the
    /// store does not say yet.
    pub(in crate::daemon) fn cpu_energy(&self, run: &RunRow, end: i64) -> Option<RunEnergy> {
        let start_rapl = lock(&self.runs.rapl_start).remove(&run.id);
        if run.gpus.is_some() {
            return None;
        }
        let end = run.finished_at.unwrap_or(end);
        let start = run.started_at;
        let secs = (end - start).max(0) as f64 / 1000.0;
        let cores = run
            .cpus
            .as_deref()
            .map_or(1, |c| c.split(',').count().max(1)) as f64;
        let tariff = self.cfg.tariff();
        let rapl = start_rapl
            .zip(read_rapl(Path::new(POWERCAP)))
            .and_then(|(a, b)| rapl_joules(&a, &b))
            .map(|j| j * (cores / self.cpu_total.max(1) as f64).min(1.0));
        let (joules, source) = match rapl {
            Some(j) => (j, "rapl"),
            None => (
                self.cfg.tariff.cpu_watts_per_core * cores * secs,
                "estimate",
            ),
        };
        // The mean power over the run, priced second by second.
        let watts = if secs > 0.0 { joules / secs } else { 0.0 };
        Some(RunEnergy {
            energy_j: joules,
            source: source.into(),
            cost: Some(tariff.cost_constant(start, end, watts)),
            currency: Some(tariff.currency),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rapl_packages_are_read_and_a_wrapped_counter_counts_once_round() {
        let dir = tempfile::tempdir().unwrap();
        let zone = |name: &str, uj: u64| {
            let z = dir.path().join(name);
            std::fs::create_dir_all(&z).unwrap();
            std::fs::write(z.join("energy_uj"), format!("{uj}\n")).unwrap();
            std::fs::write(z.join("max_energy_range_uj"), "1000000000\n").unwrap();
        };
        assert_eq!(read_rapl(dir.path()), None, "no zones");
        zone("intel-rapl:0", 999_000_000);
        zone("intel-rapl:1", 5_000_000);
        zone("intel-rapl:0:0", 42); // a sub-zone (core): inside package 0, not added
        let start = read_rapl(dir.path()).unwrap();
        assert_eq!(
            start,
            vec![(999_000_000, 1_000_000_000), (5_000_000, 1_000_000_000)]
        );
        zone("intel-rapl:0", 1_000_000); // wrapped: 1 J to the top + 1 J after
        zone("intel-rapl:1", 8_000_000);
        let end = read_rapl(dir.path()).unwrap();
        assert_eq!(rapl_joules(&start, &end), Some(2.0 + 3.0));
        std::fs::write(dir.path().join("intel-rapl:1/energy_uj"), "x").unwrap();
        assert_eq!(read_rapl(dir.path()), None, "unreadable: none");
    }
}
