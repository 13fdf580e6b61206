//! `[retention]`: how long ended tasks, their runs, events, GPU series and
//! run folders are kept, and how often the daemon collects them.

use std::time::Duration;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;

/// What is kept, and for how long.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// Tasks that succeeded or were cancelled are deleted this long after they ended.
    #[serde(with = "humantime_serde_compat")]
    pub ended: Duration,
    /// Failed tasks are kept longer, to be looked into.
    #[serde(with = "humantime_serde_compat")]
    pub failed: Duration,
    /// A compiled plugin in the code cache not used for this long is deleted.
    #[serde(with = "humantime_serde_compat")]
    pub plugin_cache: Duration,
    /// How often the daemon collects on its own (`nightjar gc` any time);
    /// "0s" turns the automatic collection off.
    #[serde(with = "humantime_serde_compat")]
    pub every: Duration,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            ended: Duration::from_secs(30 * 86_400),
            failed: Duration::from_secs(90 * 86_400),
            plugin_cache: Duration::from_secs(30 * 86_400),
            every: Duration::from_secs(3600),
        }
    }
}

impl RetentionConfig {
    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        if self.failed < self.ended {
            bail!(
                "keys `retention.failed` ({:?}) and `retention.ended` ({:?}): failures are kept at least as long as the rest",
                self.failed,
                self.ended
            );
        }
        if !self.every.is_zero() && self.every < Duration::from_secs(60) {
            bail!("key `retention.every` must be at least 1m (or \"0s\" for never)");
        }
        Ok(())
    }
}
