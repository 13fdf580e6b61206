//! `plugins ls` and `plugins reload`: their requests and what a reload
//! did to each chain member.

use serde::{Deserialize, Serialize};

/// `plugins ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PluginList {}

/// `plugins reload`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PluginReload {}

/// What a reload did to one chain member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReloadChange {
    /// The policy.
    pub plugin: String,
    /// Loaded, or rejected.
    pub outcome: ReloadOutcome,
    /// The source loaded, or why the new version was rejected.
    pub detail: String,
}

/// Whether a changed plugin file was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ReloadOutcome {
    /// The new version runs now.
    Loaded,
    /// The new version was refused; the previous one (if any) keeps running.
    Rejected,
}

impl std::fmt::Display for ReloadChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.outcome {
            ReloadOutcome::Loaded => write!(f, "policy {}: loaded ({})", self.plugin, self.detail),
            ReloadOutcome::Rejected => {
                write!(
                    f,
                    "policy {}: new version rejected: {}",
                    self.plugin, self.detail
                )
            }
        }
    }
}
