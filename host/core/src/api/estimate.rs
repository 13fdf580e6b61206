//! A task's runtime estimate, as `show` prints it and backfill uses it.

use serde::{Deserialize, Serialize};

use crate::time::fmt_span;

/// Where an estimate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum EstimateSource {
    /// The task's `timeout`: it ends by then at the latest.
    Timeout,
    /// The median of recent successful runs of tasks with its name and project.
    History,
}

/// How long a task is expected to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Estimate {
    /// Expected runtime, ms.
    pub ms: i64,
    /// Where it comes from.
    pub source: EstimateSource,
    /// For `history`: how many runs the median is of.
    #[serde(default)]
    pub runs: u32,
}

impl Estimate {
    /// `12m00s (median of 7 runs)` or `1h00m (timeout)`.
    pub fn summary(&self) -> String {
        match self.source {
            EstimateSource::Timeout => format!("{} (timeout)", fmt_span(self.ms)),
            EstimateSource::History => format!(
                "{} (median of {} run{})",
                fmt_span(self.ms),
                self.runs,
                if self.runs == 1 { "" } else { "s" }
            ),
        }
    }

    /// The median of `durations` (ms, any order), or `None` for none.
    pub fn median(durations: &[i64]) -> Option<Estimate> {
        let mut d: Vec<i64> = durations.iter().map(|&x| x.max(0)).collect();
        d.sort_unstable();
        let n = d.len();
        let ms = match n {
            0 => return None,
            _ if n % 2 == 1 => d[n / 2],
            _ => d[n / 2 - 1] + (d[n / 2] - d[n / 2 - 1]) / 2,
        };
        Some(Estimate {
            ms,
            source: EstimateSource::History,
            runs: n as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_odd_and_even_counts_and_how_it_reads() {
        assert_eq!(Estimate::median(&[]), None);
        let e = Estimate::median(&[720_000, 60_000, 900_000]).unwrap();
        assert_eq!((e.ms, e.runs), (720_000, 3));
        assert_eq!(e.summary(), "12m00s (median of 3 runs)");
        assert_eq!(Estimate::median(&[10, 20, 30, 41]).unwrap().ms, 25);
        assert_eq!(
            Estimate::median(&[-5]).unwrap().ms,
            0,
            "a clock step back is 0, not negative"
        );
        let t = Estimate {
            ms: 3_600_000,
            source: EstimateSource::Timeout,
            runs: 0,
        };
        assert_eq!(t.summary(), "1h00m (timeout)");
    }
}
