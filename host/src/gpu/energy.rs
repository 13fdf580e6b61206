//! A run's share of one GPU's energy, and its cost, summed sample by sample.
//!
//! Each round of readings adds one increment per GPU: the energy counter's
//! rise since the last round where both rounds have a counter, and always
//! the power integrated over the time since the last round (the reading's
//! power times the interval). The run is given its share of the increment:
//! the GPU memory its processes hold out of all processes' memory on the GPU
//! (the backends report no per-process utilisation, and memory is the one
//! per-process figure NVML and the simulator both give); when its processes
//! hold none that the driver reports, an even share among the nightjar runs
//! on the GPU. The increment is priced at the tariff's price at the round's
//! time, so a run that crosses a window boundary is priced piecewise, each
//! increment by the price in force at its end.

pub use nightjar_core::api::wire::RunEnergy;

use crate::tariff::Tariff;

/// How the run's energy on one GPU was measured.
#[derive(Debug, Clone, Default)]
pub struct EnergyAcc {
    counter_prev: Option<u64>,
    /// Increments from the counter: all of them (true) or some rounds lacked it.
    counter_gap: bool,
    counter_j: f64,
    counter_cost: f64,
    power_j: f64,
    power_cost: f64,
    last_at: Option<i64>,
}

impl EnergyAcc {
    /// Adds one round's increment: `counter_mj` is the GPU's counter (if
    /// any), `power_mw` its power, `share` the run's share (0..=1).
    pub fn add(
        &mut self,
        now: i64,
        counter_mj: Option<u64>,
        power_mw: u32,
        share: f64,
        tariff: Option<&Tariff>,
    ) {
        let price = |j: f64| tariff.map_or(0.0, |t| t.cost_of(now, j));
        if let Some(prev) = self.last_at {
            let j = power_mw as f64 * now.saturating_sub(prev).max(0) as f64 / 1e6 * share;
            self.power_j += j;
            self.power_cost += price(j);
            match (self.counter_prev, counter_mj) {
                (Some(a), Some(b)) => {
                    let j = b.saturating_sub(a) as f64 / 1000.0 * share;
                    self.counter_j += j;
                    self.counter_cost += price(j);
                }
                _ => self.counter_gap = true,
            }
        }
        self.counter_prev = counter_mj;
        self.last_at = Some(now);
    }

    /// The run's share: (joules, cost, whether from the counter).
    pub fn total(&self) -> (f64, f64, bool) {
        let counted = self.last_at.is_some() && self.counter_prev.is_some() && !self.counter_gap;
        if counted {
            (self.counter_j, self.counter_cost, true)
        } else {
            (self.power_j, self.power_cost, false)
        }
    }
}

/// The run's share of a GPU for one round: its processes' memory out of
/// all processes' memory, else an even split among `runs_here` runs.
pub fn share(mine_mem: u64, all_mem: u64, runs_here: usize) -> f64 {
    if mine_mem > 0 && all_mem > 0 {
        (mine_mem as f64 / all_mem as f64).min(1.0)
    } else {
        1.0 / runs_here.max(1) as f64
    }
}

/// Sums per-GPU totals into the run's energy and cost.
pub fn run_energy<'a>(
    per_gpu: impl Iterator<Item = &'a EnergyAcc>,
    tariff: Option<&Tariff>,
) -> Option<RunEnergy> {
    let (mut j, mut cost, mut all_counted, mut any) = (0.0, 0.0, true, false);
    for acc in per_gpu {
        let (aj, ac, counted) = acc.total();
        j += aj;
        cost += ac;
        all_counted &= counted;
        any = true;
    }
    any.then(|| RunEnergy {
        energy_j: j,
        source: if all_counted { "counter" } else { "integrated" }.into(),
        cost: tariff.map(|_| cost),
        currency: tariff.map(|t| t.currency.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tariff::{Tariff, Window};

    fn two_prices(boundary_s: u32) -> Tariff {
        // UTC; 1.0 per kWh before the boundary (from midnight), 3.0 after.
        let w = |from, to, price| Window {
            from_s: from,
            to_s: to,
            price,
            days: [true; 7],
            label: String::new(),
        };
        Tariff::new(
            "CNY".into(),
            9.0,
            vec![w(0, boundary_s, 1.0), w(boundary_s, 86_399, 3.0)],
            chrono_tz::UTC,
        )
        .unwrap()
    }

    #[test]
    fn counter_increments_are_shared_and_priced_at_each_round() {
        let t = two_prices(3600);
        let mut acc = EnergyAcc::default();
        // Rounds at 01:00 - 2 s, - 1 s, 01:00, + 1 s: 3.6 MJ (1 kWh) per second.
        let kwh_mj = 3_600_000_000u64;
        for (i, at) in [3_598_000_i64, 3_599_000, 3_600_000, 3_601_000]
            .iter()
            .enumerate()
        {
            acc.add(*at, Some(i as u64 * kwh_mj), 1_000, 0.5, Some(&t));
        }
        let (j, cost, counted) = acc.total();
        assert!(counted);
        assert!((j - 1.5 * 3_600_000.0).abs() < 1e-6, "half of 3 kWh: {j}");
        // 0.5 kWh at 1.0 (ends before 01:00), then 2 x 0.5 kWh at 3.0.
        assert!((cost - (0.5 + 3.0)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn without_a_counter_power_is_integrated() {
        let mut acc = EnergyAcc::default();
        for at in [0i64, 500, 1500] {
            acc.add(at, None, 200_000, 1.0, None);
        }
        let (j, cost, counted) = acc.total();
        assert!(!counted);
        assert!((j - 300.0).abs() < 1e-9, "200 W for 1.5 s: {j}");
        assert_eq!(cost, 0.0);
        let e = run_energy([&acc].into_iter(), None).unwrap();
        assert_eq!((e.source.as_str(), e.cost), ("integrated", None));
    }

    #[test]
    fn share_by_memory_else_even() {
        assert_eq!(share(1, 4, 2), 0.25);
        assert_eq!(share(0, 4, 2), 0.5, "no memory of its own reported");
        assert_eq!(share(0, 0, 1), 1.0);
    }
}
