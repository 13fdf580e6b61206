//! `wait` and `wait-progress`: the tasks waited for, and how each ended.

use serde::{Deserialize, Serialize};

use super::wire::{RunClass, TaskState};

/// `wait ID...`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Wait {
    /// Task ids (a sweep id waits for all members).
    pub ids: Vec<i64>,
}

/// `wait-progress`: the tasks `wait` would wait for, counted by state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WaitProgress {
    /// Task ids, as `wait` takes them (a sweep id counts its members).
    pub ids: Vec<i64>,
}

/// How one waited-for task ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WaitResult {
    /// Task id.
    pub id: i64,
    /// Final state.
    pub state: TaskState,
    /// Class of the last run.
    pub class: Option<RunClass>,
    /// Exit code of the last run.
    pub exit_code: Option<i32>,
    /// Signal of the last run.
    pub signal: Option<i32>,
}
