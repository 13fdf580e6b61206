//! What the store hands out beyond the wire types: a run's end and a
//! candidate for the scheduler. The rows `ls` and `show` print are the
//! protocol's (`nightjar_core::api::wire`), re-exported here.

use serde::{Deserialize, Serialize};

pub use nightjar_core::api::wire::{
    Counts, DepRow, EventRow, RunClass, RunRow, ScheduleInfo, TaskDetail, TaskRow, TaskState,
};

use crate::task::model::TaskSpec;

/// The end of one run, as the supervisor (or adoption) reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// The class the run falls in.
    pub class: RunClass,
    /// Exit code, when the process exited.
    pub exit_code: Option<i32>,
    /// Signal number, when the process was killed by one.
    pub signal: Option<i32>,
    /// When it ended (Unix ms).
    pub finished_at: i64,
    /// A human explanation (spawn error, timeout, ...).
    pub message: Option<String>,
}

/// A task ready to be placed, in scheduling order.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Task id.
    pub id: i64,
    /// Its spec (shared with the store's cache of decoded specs).
    pub spec: std::sync::Arc<TaskSpec>,
    /// Submitted (Unix ms).
    pub submitted_at: i64,
    /// Eligible since: submit, end of backoff, or its last dependency's end (Unix ms).
    pub eligible_at: i64,
    /// Attempts so far in this round.
    pub attempts: i64,
    /// After a gpu-oom: start only on GPUs with more free memory than this
    /// (the last run's peak), bytes.
    pub needs_gpu_free: Option<u64>,
}
