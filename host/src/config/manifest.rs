//! `[manifest]`: what a reproducibility manifest may cost at submit and at a
//! run's start, and what an input changed since submit means.

use std::time::Duration;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;

/// What to do when an input's content at a run's start differs from its
/// digest at submit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputsChanged {
    /// Run it; `show` flags the input and an event names it.
    Warn,
    /// Fail the run before it starts, naming the input.
    Refuse,
}

/// Settings of the manifests.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ManifestConfig {
    /// `warn` or `refuse`.
    pub inputs_changed: InputsChanged,
    /// Time allowed for all `git` calls of one capture together.
    #[serde(with = "humantime_serde_compat")]
    pub git_timeout: Duration,
    /// Time allowed for `pip freeze` in the task's virtual environment.
    #[serde(with = "humantime_serde_compat")]
    pub python_timeout: Duration,
}

impl Default for ManifestConfig {
    fn default() -> Self {
        ManifestConfig {
            inputs_changed: InputsChanged::Warn,
            git_timeout: Duration::from_secs(5),
            python_timeout: Duration::from_secs(10),
        }
    }
}

impl ManifestConfig {
    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        for (key, d) in [
            ("git_timeout", self.git_timeout),
            ("python_timeout", self.python_timeout),
        ] {
            if d < Duration::from_millis(100) || d > Duration::from_secs(600) {
                bail!(
                    "key `manifest.{key}` is {}: it must be between 100ms and 10m",
                    humantime::format_duration(d)
                );
            }
        }
        Ok(())
    }
}
