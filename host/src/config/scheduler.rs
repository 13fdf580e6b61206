//! `[scheduler]`: how a task that does not fit now is treated (EASY
//! backfill), and how runtimes are estimated.

use serde::{Deserialize, Serialize};

/// Backfill and runtime estimates.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// EASY backfill: the highest-ranked task that does not fit reserves
    /// its earliest start, and later tasks start only if they do not delay
    /// it. Off: a task that does not fit is passed over (a big one can wait
    /// for ever behind a stream of small ones).
    pub backfill: bool,
    /// A task without a timeout is estimated by the median of the last this
    /// many successful runs of tasks with its name and project.
    pub estimate_runs: u32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            backfill: true,
            estimate_runs: 10,
        }
    }
}

impl SchedulerConfig {
    /// Checks the values.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(1..=1000).contains(&self.estimate_runs) {
            anyhow::bail!(
                "key `scheduler.estimate_runs` is {}: it must be 1 to 1000 (the successful runs whose median estimates a task's runtime)",
                self.estimate_runs
            );
        }
        Ok(())
    }
}
