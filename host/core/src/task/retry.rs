//! How often a failed task is tried again, and how long it waits between
//! tries (a task's `retry` table).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::api::wire::RunClass;
use crate::humantime_serde_compat;

/// How often a failed task is tried again, and how long to wait between tries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// The failure classes that are tried again (while attempts are left).
    /// Others end the task at once. A `preempted` run is always queued
    /// again without using an attempt, and a `disk-full` one is held until
    /// the disk has room, also without using one.
    #[serde(default = "RetryPolicy::default_on")]
    pub on: Vec<RunClass>,
    /// Wait before the second attempt; doubled for each later one.
    #[serde(with = "humantime_serde_compat")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub backoff: Duration,
    /// The longest wait between attempts.
    #[serde(with = "humantime_serde_compat")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub backoff_max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 1,
            on: RetryPolicy::default_on(),
            backoff: Duration::from_secs(10),
            backoff_max: Duration::from_secs(3600),
        }
    }
}

impl RetryPolicy {
    /// The classes retried when a task names none: the transient ones, and
    /// `gpu-oom` (which waits for a GPU with more free memory than the run's
    /// peak). `app-error`, `validation-failed`, `timeout`, `host-oom` and
    /// `killed` are deterministic often enough that a retry would burn the
    /// night: they are retried only when listed.
    pub fn default_on() -> Vec<RunClass> {
        vec![
            RunClass::Network,
            RunClass::Lost,
            RunClass::Preempted,
            RunClass::GpuOom,
        ]
    }

    /// Refuses settings that cannot mean what they say, naming the key.
    pub fn check(&self) -> Result<(), String> {
        if self.max_attempts == 0 {
            return Err("retry.max_attempts must be at least 1 (1 = no retry)".into());
        }
        for class in &self.on {
            let why = match class {
                RunClass::Ok => "a run that succeeded is not retried",
                RunClass::Cancelled => "a cancelled run stays cancelled (use `nightjar retry ID`)",
                RunClass::DiskFull => {
                    "a disk-full run is never retried at once: the task is held until its file systems have room again ([classes] disk_free in the daemon config), without using an attempt"
                }
                _ => continue,
            };
            return Err(format!(
                "retry.on: `{}` cannot be listed: {why}; list failure classes such as {}",
                class.as_str(),
                RetryPolicy::default_on()
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(())
    }

    /// Whether a run of `class` is tried again (attempts permitting).
    pub fn retries(&self, class: RunClass) -> bool {
        self.on.contains(&class)
    }

    /// The wait before attempt `next_attempt` (2 = the first retry).
    pub fn delay_before(&self, next_attempt: u32) -> Duration {
        let doublings = next_attempt.saturating_sub(2).min(30);
        self.backoff
            .saturating_mul(1u32 << doublings)
            .min(self.backoff_max)
    }
}
