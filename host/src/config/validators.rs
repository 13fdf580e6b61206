//! `[validators]`: the limits every result validator runs under and what a
//! validator's own failure means; `[validate]`: validators a whole project's
//! runs are judged by, on top of each task's `[[validate]]`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};
use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;
use crate::task::model::ValidatorRef;

/// Limits of result validators.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ValidatorsConfig {
    /// Deadline of one validation (instantiation, configure and validate).
    #[serde(with = "humantime_serde_compat")]
    pub timeout: Duration,
    /// Memory one validator may hold in all (every memory and table).
    pub memory_limit: ByteSize,
    /// `closed`: a validator that fails or cannot load fails the run;
    /// `open`: it is a warning and the run keeps its class.
    pub on_failure: super::OnFailure,
}

impl Default for ValidatorsConfig {
    fn default() -> Self {
        ValidatorsConfig {
            timeout: Duration::from_secs(10),
            memory_limit: ByteSize::mib(256),
            on_failure: super::OnFailure::Closed,
        }
    }
}

impl ValidatorsConfig {
    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        if self.timeout < Duration::from_millis(10) || self.timeout > Duration::from_secs(600) {
            bail!("key `validators.timeout` must be between 10ms and 10m");
        }
        if self.memory_limit.as_u64() < (1 << 20) {
            bail!("key `validators.memory_limit` must be at least 1 MiB");
        }
        Ok(())
    }
}

/// `[validate]`: project name -> its validators' tables, resolved against
/// the config file's folder at load.
pub fn resolve_projects(
    tables: &BTreeMap<String, Vec<toml::Table>>,
    base: &Path,
) -> Result<BTreeMap<String, Vec<ValidatorRef>>> {
    tables
        .iter()
        .map(|(project, list)| {
            crate::task::validate::resolve(list, base)
                .map(|refs| (project.clone(), refs))
                .map_err(|e| anyhow::anyhow!("table `[validate]`, project `{project}`: {e}"))
        })
        .collect()
}
