//! What a policy sees in one pass, with text as `&str`: the SDK keeps these
//! records between passes and applies each pass's change to them
//! (`kept`), borrowing every string from the table the host sent.

use crate::Priority;

/// Everything a policy sees in one pass. `now` is the only clock: policies
/// never read the wall clock, so the same plugin runs unchanged in a
/// simulator. Every id in `queue` and `running` is distinct.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot<'a> {
    /// Unix time in milliseconds (UTC).
    pub now: i64,
    /// IANA name of the daemon's time zone.
    pub time_zone: &'a str,
    /// Offset of that zone from UTC at `now`, in seconds.
    pub utc_offset: i32,
    /// Waiting tasks, in the host's order (priority, then submit time).
    pub queue: Vec<QueuedTask<'a>>,
    /// Running tasks.
    pub running: Vec<RunningTask<'a>>,
    /// Every GPU placement may use.
    pub gpus: Vec<Gpu<'a>>,
    /// Runs that started in the host's usage window (default 7 days).
    pub usage: Vec<Usage<'a>>,
}

/// A task waiting to start (dependencies met, backoff over).
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedTask<'a> {
    /// The task's id.
    pub id: i64,
    /// Its name.
    pub name: &'a str,
    /// Its project.
    pub project: &'a str,
    /// How urgent it is.
    pub priority: Priority,
    /// GPUs it asks for.
    pub gpus: u32,
    /// GPU memory per GPU in bytes, when the task says.
    pub gpu_mem: Option<u64>,
    /// When it was submitted (Unix ms).
    pub submitted_at: i64,
    /// When it became eligible to start (Unix ms).
    pub eligible_at: i64,
    /// Attempts made so far.
    pub attempts: u32,
    /// Expected run time in ms: its timeout if it has one.
    pub estimated_runtime: Option<u64>,
}

/// A task that is running.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningTask<'a> {
    /// The task's id.
    pub id: i64,
    /// Its name.
    pub name: &'a str,
    /// Its project.
    pub project: &'a str,
    /// How urgent it is.
    pub priority: Priority,
    /// GPU indices it holds.
    pub gpus: Vec<u32>,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// Whether the host honours a preemption request for it.
    pub preemptible: bool,
}

/// A GPU as the host last read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu<'a> {
    /// Its index (as `CUDA_VISIBLE_DEVICES` counts).
    pub index: u32,
    /// Its uuid.
    pub uuid: &'a str,
    /// Its model name.
    pub name: &'a str,
    /// Memory in bytes.
    pub mem_total: u64,
    /// Bytes used by all processes.
    pub mem_used: u64,
    /// Bytes reserved by nightjar's placements.
    pub mem_reserved: u64,
    /// Utilisation, percent.
    pub util: u32,
    /// Degrees Celsius.
    pub temperature: u32,
    /// Milliwatts.
    pub power: u32,
    /// False while the host cannot read it.
    pub healthy: bool,
    /// Policies that closed this GPU in the previous pass.
    pub closed_by: Vec<&'a str>,
}

/// One run's use of the machine, for usage accounting.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage<'a> {
    /// The run's project.
    pub project: &'a str,
    /// GPUs it held (0 for CPU-only runs).
    pub gpus: u32,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// When it ended; None while it runs.
    pub ended_at: Option<i64>,
}

/// Priority from the queue's `priority` column (the case counted from 0).
pub(crate) fn priority(rank: u8) -> Priority {
    match rank {
        0 => Priority::Low,
        1 => Priority::Normal,
        2 => Priority::High,
        _ => Priority::Urgent,
    }
}

/// A "not said" 0 as `None`.
pub(crate) fn said(n: u64) -> Option<u64> {
    (n != 0).then_some(n)
}
