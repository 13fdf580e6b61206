//! `audit`: the administrative actions the daemon recorded, and `priority`,
//! one of them.

use serde::{Deserialize, Serialize};

use crate::task::model::Priority as Level;

/// `audit [--since]`: the log, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Audit {
    /// Only entries at or after this (Unix ms).
    #[serde(default)]
    pub since: Option<i64>,
    /// At most this many, the newest (none: 1000).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// One administrative action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AuditRow {
    /// Entry id (increasing).
    pub id: i64,
    /// When (Unix ms).
    pub at: i64,
    /// Who: uid.
    pub uid: u32,
    /// Who: name.
    pub user: String,
    /// What: `priority`, `cancel`, `hold`, `release`, `retry`, `plugins-reload`,
    /// `config-loaded`, `gc`, `token-create`, `token-revoke`.
    pub action: String,
    /// The task acted on, if any.
    pub task: Option<i64>,
    /// The rest, for a person.
    pub detail: String,
}

/// `priority ID LEVEL` (administrators only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Priority {
    /// Task id (a sweep's id changes its waiting members too).
    pub id: i64,
    /// The new level.
    pub priority: Level,
}
