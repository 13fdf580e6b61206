//! `[scheduler]`: how a task that does not fit now is treated (`order`:
//! EASY backfill, first fit or strict), and how runtimes are estimated.

use serde::{Deserialize, Serialize};

/// What a task that does not fit now means for the tasks behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// EASY backfill: the highest-ranked task that does not fit reserves
    /// its earliest start, and later tasks start only if they do not delay it.
    #[default]
    Backfill,
    /// Passed over: later tasks start in its place (a big one can wait for
    /// ever behind a stream of small ones).
    FirstFit,
    /// It blocks every task behind it until it starts.
    Strict,
}

impl Order {
    /// The value as the config writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Backfill => "backfill",
            Order::FirstFit => "first-fit",
            Order::Strict => "strict",
        }
    }
}

/// Backfill and runtime estimates. Written out (the config shown, the
/// defaults), `order` is the order in force and the old `backfill` is not.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// What a task that does not fit means for those behind it (default
    /// `backfill`; read it through [`SchedulerConfig::order`]).
    pub order: Option<Order>,
    /// The old spelling (before `order`): `true` is `backfill`, `false` is
    /// `first-fit`. Still read; refused together with `order`.
    pub backfill: Option<bool>,
    /// A task without a timeout is estimated by the median of the last this
    /// many successful runs of tasks with its name and project.
    pub estimate_runs: u32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            order: None,
            backfill: None,
            estimate_runs: 10,
        }
    }
}

impl Serialize for SchedulerConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut t = s.serialize_struct("SchedulerConfig", 2)?;
        t.serialize_field("order", &self.order())?;
        t.serialize_field("estimate_runs", &self.estimate_runs)?;
        t.end()
    }
}

impl SchedulerConfig {
    /// The order in force: `order`, else the old `backfill`, else backfill.
    pub fn order(&self) -> Order {
        match (self.order, self.backfill) {
            (Some(o), _) => o,
            (None, Some(false)) => Order::FirstFit,
            (None, _) => Order::Backfill,
        }
    }

    /// Checks the values.
    pub fn validate(&self) -> anyhow::Result<()> {
        if let (Some(order), Some(backfill)) = (self.order, self.backfill) {
            anyhow::bail!(
                "keys `scheduler.order` (\"{}\") and `scheduler.backfill` ({backfill}) are both set: `backfill` is the old spelling of `order`; keep only `order = \"backfill\"`, `\"first-fit\"` or `\"strict\"`",
                order.as_str()
            );
        }
        if !(1..=1000).contains(&self.estimate_runs) {
            anyhow::bail!(
                "key `scheduler.estimate_runs` is {}: it must be 1 to 1000 (the successful runs whose median estimates a task's runtime)",
                self.estimate_runs
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<SchedulerConfig> {
        let c: SchedulerConfig = toml::from_str(text)?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn order_is_read_and_the_old_backfill_key_still_means_what_it_meant() {
        assert_eq!(parse("").unwrap().order(), Order::Backfill);
        assert_eq!(parse("order = \"strict\"").unwrap().order(), Order::Strict);
        assert_eq!(
            parse("order = \"first-fit\"").unwrap().order(),
            Order::FirstFit
        );
        assert_eq!(parse("backfill = false").unwrap().order(), Order::FirstFit);
        assert_eq!(parse("backfill = true").unwrap().order(), Order::Backfill);
        // Written out, the old key is the new one.
        let shown = toml::to_string(&parse("backfill = false").unwrap()).unwrap();
        assert_eq!(shown, "order = \"first-fit\"\nestimate_runs = 10\n");
    }

    #[test]
    fn both_spellings_at_once_or_an_unknown_order_are_refused_by_key() {
        let both = parse("order = \"strict\"\nbackfill = true").unwrap_err();
        assert!(both.to_string().contains("`scheduler.backfill`"), "{both}");
        let bad = parse("order = \"fifo\"").unwrap_err();
        assert!(bad.to_string().contains("unknown variant `fifo`"), "{bad}");
    }
}
