//! What result validators found in a run's outputs, as `show` and `--json`
//! carry it.

use serde::{Deserialize, Serialize};

/// How much a finding weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Shown; changes nothing.
    Info,
    /// Shown; the run still succeeds.
    Warning,
    /// The run fails as `validation-failed`.
    Error,
}

impl Severity {
    /// The word shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One thing a validator found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Finding {
    /// The validator that found it (`outputs`, or a plugin file's stem).
    pub validator: String,
    /// How much it weighs.
    pub severity: Severity,
    /// The file it is about, relative to the output folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} [{}]", self.severity.as_str(), self.validator)?;
        if let Some(p) = &self.path {
            write!(f, " {p}")?;
        }
        write!(f, ": {}", self.message)
    }
}
