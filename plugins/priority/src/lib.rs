//! `priority`: scores waiting tasks by priority class, plus aging so a low
//! priority task never starves: every hour waited adds `aging_per_hour`
//! points, up to `max_aging`.
//!
//! ```toml
//! [plugin.priority.config]
//! weights = { low = 0, normal = 100, high = 200, urgent = 1000 }
//! aging_per_hour = 10
//! max_aging = 500
//! ```

use nightjar_sdk::*;
use serde::Deserialize;

/// `[plugin.priority.config]`: the weight of each class and the aging.
/// Public, with [`PriorityPolicy`], for the host's native benchmark.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    weights: Weights,
    aging_per_hour: i32,
    max_aging: i32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Weights {
    low: i32,
    normal: i32,
    high: i32,
    urgent: i32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            low: 0,
            normal: 100,
            high: 200,
            urgent: 1000,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            weights: Weights::default(),
            aging_per_hour: 10,
            max_aging: 500,
        }
    }
}

/// The policy.
pub struct PriorityPolicy;

/// The score of one task at `now`.
fn score(cfg: &Config, t: &QueuedTask<'_>, now: i64) -> i32 {
    let w = &cfg.weights;
    let class = match t.priority {
        Priority::Low => w.low,
        Priority::Normal => w.normal,
        Priority::High => w.high,
        Priority::Urgent => w.urgent,
    };
    let hours = (now - t.eligible_at).max(0) / 3_600_000;
    let aging = (hours.min(i32::MAX as i64) as i32)
        .saturating_mul(cfg.aging_per_hour)
        .min(cfg.max_aging);
    class.saturating_add(aging)
}

impl Policy for PriorityPolicy {
    type Config = Config;

    fn evaluate(cfg: &Config, s: &Snapshot) -> Evaluation {
        let mut e = Evaluation::with_capacity(s.queue.len());
        for t in &s.queue {
            e.allow(t.id, score(cfg, t, s.now));
        }
        e
    }

    fn check_config(cfg: &Config) -> Result<(), ConfigError> {
        for (key, value) in [
            ("aging_per_hour", cfg.aging_per_hour),
            ("max_aging", cfg.max_aging),
        ] {
            if value < 0 {
                return Err(ConfigError::at(
                    key,
                    format!("{value} is negative; aging only lifts a score, use 0 for none"),
                ));
            }
        }
        Ok(())
    }
}

export_policy!(PriorityPolicy);

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_sdk::testing::SnapshotBuilder;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        PriorityPolicy::configure(text)
    }

    fn scores(s: Snapshot<'_>) -> Vec<(i64, i32)> {
        PriorityPolicy::evaluate(&parse("").unwrap(), &s)
            .verdicts
            .into_iter()
            .map(|v| match v.verdict {
                Verdict::Allow(n) => (v.task, n),
                _ => panic!("priority only allows"),
            })
            .collect()
    }

    #[test]
    fn classes_order_and_aging_lifts_old_low_priority_work() {
        let hour = 3_600_000;
        let s = SnapshotBuilder::at(20 * hour)
            .queued(1, "a", Priority::Low, 0)
            .queued(2, "a", Priority::Normal, 19 * hour)
            .queued(3, "a", Priority::Urgent, 20 * hour)
            .build();
        assert_eq!(
            scores(s),
            vec![(1, 200), (2, 110), (3, 1000)],
            "20 h of aging lifts low above a fresh normal"
        );
    }

    #[test]
    fn bad_config_is_refused_with_the_key() {
        assert!(parse("aging_per_hour = -1").unwrap_err().key.is_some());
        assert_eq!(
            parse("max_aging = -5").unwrap_err().key.as_deref(),
            Some("max_aging")
        );
        assert_eq!(
            parse("colour = 1").unwrap_err().key.as_deref(),
            Some("colour")
        );
        assert_eq!(
            parse("[weights]\nhigh = \"lots\"")
                .unwrap_err()
                .key
                .as_deref(),
            Some("weights.high")
        );
        assert_eq!(parse("").unwrap().weights.urgent, 1000);
    }
}
