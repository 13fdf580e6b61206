//! The snapshot a policy pass hands to the chain: the queue, the running
//! tasks, the GPUs, recent usage and the time, in the contract's types.

use std::sync::Arc;

use chrono::{Offset, TimeZone};

use crate::config::Config;
use crate::plugins::policy as p;
use crate::store::{Candidate, RunningInfo, UsageInfo};
use crate::task::model::{Priority, TaskSpec};

/// The plugin-facing priority.
pub fn priority(p: Priority) -> p::Priority {
    match p {
        Priority::Low => p::Priority::Low,
        Priority::Normal => p::Priority::Normal,
        Priority::High => p::Priority::High,
        Priority::Urgent => p::Priority::Urgent,
    }
}

/// Builds the snapshot a pass hands to the chain.
pub fn snapshot(
    cfg: &Config,
    now: i64,
    queue: Vec<p::QueuedTask>,
    running: Vec<p::RunningTask>,
    gpus: Vec<p::Gpu>,
    (usage, projects): (Arc<[p::Usage]>, Arc<[Arc<str>]>),
) -> p::Snapshot {
    let tz = cfg.tz();
    let offset = tz
        .offset_from_utc_datetime(&crate::time::to_utc(now).naive_utc())
        .fix()
        .local_minus_utc();
    p::Snapshot {
        now,
        time_zone: cfg.timezone.clone(),
        utc_offset: offset,
        queue,
        running,
        gpus,
        usage,
        projects,
    }
}

/// A waiting task as a policy sees it.
pub fn queued(c: &Candidate) -> p::QueuedTask {
    queued_as(
        c,
        c.spec.name.as_str().into(),
        c.spec.project.as_str().into(),
    )
}

/// As [`queued`], with the task's name and project already shared (the
/// simulator keeps them so, and hands them on each pass without a copy).
pub fn queued_as(c: &Candidate, name: Arc<str>, project: Arc<str>) -> p::QueuedTask {
    let times = (c.submitted_at, c.eligible_at);
    queued_spec(c.id, &c.spec, times, c.attempts, name, project)
}

/// A waiting task as a policy sees it, from its parts: its id, spec,
/// (submitted, eligible) times and attempts (the simulator's jobs have no
/// store [`Candidate`]).
pub fn queued_spec(
    id: i64,
    spec: &TaskSpec,
    (submitted_at, eligible_at): (i64, i64),
    attempts: i64,
    name: Arc<str>,
    project: Arc<str>,
) -> p::QueuedTask {
    let r = &spec.resources;
    p::QueuedTask {
        id,
        name,
        project,
        priority: priority(spec.priority),
        resources: p::Resources {
            gpus: r.gpus,
            gpu_mem: r.gpu_mem.map(|m| m.as_u64()),
            cpus: r.cpus,
            mem: r.mem.map(|m| m.as_u64()),
            timeout: r.timeout.map(|t| t.as_millis() as u64),
        },
        submitted_at,
        eligible_at,
        attempts: attempts.max(0) as u32,
        estimated_runtime: r.timeout.map(|t| t.as_millis() as u64),
    }
}

/// A running task as a policy sees it.
pub fn running(t: &RunningInfo) -> p::RunningTask {
    p::RunningTask {
        id: t.id,
        name: t.name.as_str().into(),
        project: t.project.as_str().into(),
        priority: priority(t.priority),
        gpus: t.gpus.clone(),
        started_at: t.started_at,
        preemptible: t.preemptible,
    }
}

/// The usage a pass shows, from the store's records, with the projects it
/// names.
pub fn usage(usage: &[UsageInfo]) -> (Arc<[p::Usage]>, Arc<[Arc<str>]>) {
    let mut table = p::UsageTable::default();
    let rows = (usage.iter())
        .map(|u| table.row(&u.project, u.gpus, u.started_at, u.ended_at))
        .collect();
    (rows, table.names())
}
