//! `nightjar rerun ID`: a new task from a run's record, its inputs checked
//! against the digests that run started with.

use serde::{Deserialize, Serialize};

use super::manifest::RerunOf;

/// `rerun ID [--run RUN] [--allow-changed] [--name NAME]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Rerun {
    /// The task (a plain task, a sweep member or a recurring instance).
    pub id: i64,
    /// Which of its runs (default: the latest that has a start manifest).
    #[serde(default)]
    pub run: Option<i64>,
    /// Submit even when inputs differ from that run's.
    #[serde(default)]
    pub allow_changed: bool,
    /// The new task's name (default: the task's).
    #[serde(default)]
    pub name: Option<String>,
}

/// What `rerun` queued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Rerunning {
    /// The new task.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The task and run it reruns, and the inputs that changed since.
    pub rerun_of: RerunOf,
    /// What else differs from that run and is not an error (the workdir's
    /// commit, its uncommitted changes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
