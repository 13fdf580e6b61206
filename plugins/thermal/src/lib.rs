//! `thermal`: closes a GPU to new work above a temperature and reopens it
//! only below a lower one (hysteresis: the snapshot says which GPUs this
//! policy closed last pass); optionally closes GPUs drawing more than a power
//! cap. Running tasks are never touched. The reason names the GPU and its
//! temperature.
//!
//! ```toml
//! [plugin.thermal.config]
//! close_above = 85     # °C
//! reopen_below = 75    # °C
//! power_cap_w = 350    # optional
//! ```

use nightjar_sdk::*;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Config {
    close_above: u32,
    reopen_below: u32,
    power_cap_w: Option<u32>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            close_above: 85,
            reopen_below: 75,
            power_cap_w: None,
        }
    }
}

/// The policy.
struct Thermal;

impl Policy for Thermal {
    type Config = Config;

    fn evaluate(cfg: &Config, s: &Snapshot) -> Evaluation {
        // The name this policy is loaded under, as the snapshot's `closed-by` says it.
        let name = plugin_name("thermal");
        let mut e = Evaluation::default();
        for g in &s.gpus {
            let was_closed = g.closed_by.contains(&name.as_str());
            let t = g.temperature;
            if t > cfg.close_above || (was_closed && t >= cfg.reopen_below) {
                e.close_gpu(
                    g.index,
                    format!(
                        "GPU {} at {t}°C (closes above {}°C, reopens below {}°C)",
                        g.index, cfg.close_above, cfg.reopen_below
                    ),
                );
            } else if let Some(cap) = cfg.power_cap_w
                && g.power > cap.saturating_mul(1000)
            {
                e.close_gpu(
                    g.index,
                    format!(
                        "GPU {} draws {} W, above the cap of {cap} W",
                        g.index,
                        g.power / 1000
                    ),
                );
            }
        }
        e
    }

    fn check_config(cfg: &Config) -> Result<(), ConfigError> {
        if cfg.reopen_below > cfg.close_above {
            return Err(ConfigError::at(
                "reopen_below",
                format!(
                    "reopen_below ({}) must not be above close_above ({}); lower it, or raise close_above",
                    cfg.reopen_below, cfg.close_above
                ),
            ));
        }
        Ok(())
    }
}

export_policy!(Thermal);

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_sdk::testing::SnapshotBuilder;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Thermal::configure(text)
    }

    fn evaluate(s: Snapshot<'_>) -> Evaluation {
        Thermal::evaluate(&parse("close_above = 85\nreopen_below = 75").unwrap(), &s)
    }

    fn closed(s: Snapshot<'_>) -> Vec<u32> {
        evaluate(s).closed_gpus.iter().map(|c| c.index).collect()
    }

    #[test]
    fn hysteresis_closes_hot_gpus_and_reopens_only_when_cool() {
        let hot = SnapshotBuilder::at(0).gpu(0, 90).gpu(1, 80).build();
        assert_eq!(closed(hot), vec![0]);
        let mut cooling = SnapshotBuilder::at(0).gpu(0, 80).gpu(1, 80).build();
        cooling.gpus[0].closed_by = vec!["thermal"];
        assert_eq!(
            closed(cooling),
            vec![0],
            "80°C is not below 75°C: still closed"
        );
        let mut cool = SnapshotBuilder::at(0).gpu(0, 70).build();
        cool.gpus[0].closed_by = vec!["thermal"];
        assert!(closed(cool).is_empty());
        let reason = evaluate(SnapshotBuilder::at(0).gpu(3, 91).build()).closed_gpus[0]
            .reason
            .clone();
        assert_eq!(
            reason,
            "GPU 3 at 91°C (closes above 85°C, reopens below 75°C)"
        );
    }

    #[test]
    fn reopen_above_close_is_refused() {
        assert_eq!(
            parse("close_above = 70\nreopen_below = 80")
                .unwrap_err()
                .key
                .as_deref(),
            Some("reopen_below")
        );
    }
}
