//! What the store hands out beyond the wire types: a candidate for the
//! scheduler. The rows `ls` and `show` print are the protocol's
//! (`nightjar_core::api::wire`), and a run's end is the core's
//! (`RunOutcome`, next to `RunClass`, so the supervisor needs no store);
//! both are re-exported here.

pub use nightjar_core::api::class::RunOutcome;
pub use nightjar_core::api::wire::{
    Counts, DepRow, EventRow, RunClass, RunRow, ScheduleInfo, TaskDetail, TaskKind, TaskRow,
    TaskState,
};

use crate::task::model::TaskSpec;

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
