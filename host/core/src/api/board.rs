//! The dashboard's two views as verbs every client can call: one page of
//! the queue (`queue`) and the runs that ended since a moment (`runs`).

use serde::{Deserialize, Serialize};

use super::wire::TaskRow;

/// Most rows one `queue` or `runs` request returns.
pub const MAX_ROWS: u32 = 1000;

/// `queue`: a page of the waiting and running tasks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Queue {
    /// Rows on the page (at most [`MAX_ROWS`]; 0, null or absent: 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Rows skipped before the page (`(page - 1) * limit`).
    #[serde(default)]
    pub offset: u64,
}

/// One page of the waiting and running tasks, and the counts of all.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QueuePage {
    /// The tasks on this page: running first, then queued, then held; by id.
    pub rows: Vec<TaskRow>,
    /// Running tasks in all.
    pub running: u64,
    /// Queued or held tasks in all.
    pub waiting: u64,
}

impl QueuePage {
    /// Tasks on every page together.
    pub fn total(&self) -> u64 {
        self.running + self.waiting
    }
}

/// `runs`: the runs that ended since a moment, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Runs {
    /// Ended at or after this (Unix ms).
    pub since: i64,
    /// At most this many (at most [`MAX_ROWS`]; 0, null or absent: 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// A run that ended, as the dashboard's `/runs` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FinishedRun {
    /// Its task.
    pub task: i64,
    /// Attempt number.
    pub attempt: i64,
    /// The task's name.
    pub name: String,
    /// The task's project.
    pub project: String,
    /// The task's owner (none: the daemon's user).
    pub owner: Option<String>,
    /// Started (Unix ms).
    pub started_at: i64,
    /// Ended (Unix ms).
    pub finished_at: i64,
    /// How it ended (`ok`, `app-error`, ...).
    pub class: Option<String>,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Energy, joules.
    pub energy_j: Option<f64>,
    /// Cost, in `currency`.
    pub cost: Option<f64>,
    /// The cost's currency.
    pub currency: Option<String>,
}

/// `limit` as asked, with `default` for none or 0, and at most [`MAX_ROWS`].
pub fn rows(limit: Option<u32>, default: u32) -> u32 {
    match limit {
        None | Some(0) => default,
        Some(n) => n.min(MAX_ROWS),
    }
}
