//! `[retention]`: how long ended tasks, their runs, events, GPU series and
//! run folders are kept; how long a run's local outputs and scratch are
//! kept by its outcome; how often the daemon collects them; and the free
//! space below which no new run starts.

use std::time::Duration;

use anyhow::{Result, bail};
use bytesize::ByteSize;
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
    /// A succeeded run's local outputs and scratch, once its archive is verified.
    #[serde(with = "humantime_serde_compat")]
    pub outputs_archived: Duration,
    /// A succeeded run's, when its project has no archive.
    #[serde(with = "humantime_serde_compat")]
    pub outputs_succeeded: Duration,
    /// A failed run's (any class but ok and cancelled).
    #[serde(with = "humantime_serde_compat")]
    pub outputs_failed: Duration,
    /// A cancelled run's.
    #[serde(with = "humantime_serde_compat")]
    pub outputs_cancelled: Duration,
    /// Also remove the output folders tasks chose themselves (`output =` in
    /// a task file); by default only what nightjar made (the run folder's
    /// `output`, and scratch) is removed.
    pub task_outputs: bool,
    /// No new run starts while the state dir's (or scratch's) file system
    /// has less free than this; "0B" turns the check off.
    pub min_free: ByteSize,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            ended: Duration::from_secs(30 * 86_400),
            failed: Duration::from_secs(90 * 86_400),
            plugin_cache: Duration::from_secs(30 * 86_400),
            every: Duration::from_secs(3600),
            outputs_archived: Duration::ZERO,
            outputs_succeeded: Duration::from_secs(86_400),
            outputs_failed: Duration::from_secs(7 * 86_400),
            outputs_cancelled: Duration::from_secs(86_400),
            task_outputs: false,
            min_free: ByteSize::gib(1),
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
