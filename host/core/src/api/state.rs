//! What a task is (its kind, fixed at submit) and where it stands (its
//! state), as the wire and the store name them.

use serde::{Deserialize, Serialize};

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Waiting to start (dependencies, backoff or a free slot).
    Queued,
    /// Kept from starting until `release`.
    Held,
    /// A dependency failed; waits until it is retried or the task is cancelled.
    Blocked,
    /// A run is in progress.
    Running,
    /// Ended well.
    Succeeded,
    /// Ended badly with no attempts left.
    Failed,
    /// Cancelled by a user.
    Cancelled,
    /// The parent row of a sweep; its members hold the states.
    Sweep,
    /// A recurring template waiting for its next firing.
    Scheduled,
}

impl TaskState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::Held => "held",
            TaskState::Blocked => "blocked",
            TaskState::Running => "running",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
            TaskState::Sweep => "sweep",
            TaskState::Scheduled => "scheduled",
        }
    }

    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<TaskState> {
        Some(match s {
            "queued" => TaskState::Queued,
            "held" => TaskState::Held,
            "blocked" => TaskState::Blocked,
            "running" => TaskState::Running,
            "succeeded" => TaskState::Succeeded,
            "failed" => TaskState::Failed,
            "cancelled" => TaskState::Cancelled,
            "sweep" => TaskState::Sweep,
            "scheduled" => TaskState::Scheduled,
            _ => return None,
        })
    }

    /// True once nothing more will happen without a user's action.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskState::Succeeded | TaskState::Failed | TaskState::Cancelled
        )
    }
}

/// What a row of the task table is. The kind never changes after submit;
/// the state ([`TaskState`]) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// A task: it runs, or waits to.
    Task,
    /// The parent row of a sweep; its members are tasks.
    Sweep,
    /// A recurring template; each firing adds a task under it.
    Recurring,
}

impl TaskKind {
    /// The stored (and wire) name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Task => "task",
            TaskKind::Sweep => "sweep",
            TaskKind::Recurring => "recurring",
        }
    }

    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<TaskKind> {
        Some(match s {
            "task" => TaskKind::Task,
            "sweep" => TaskKind::Sweep,
            "recurring" => TaskKind::Recurring,
            _ => return None,
        })
    }
}
