//! The snapshot a policy pass hands to the chain: the queue, the running
//! tasks, the GPUs, recent usage and the time, in the contract's types.

use chrono::{Offset, TimeZone};

use crate::config::Config;
use crate::plugins::policy as p;
use crate::store::{Candidate, RunningInfo, UsageInfo};
use crate::task::model::Priority;

/// The plugin-facing priority.
fn priority(p: Priority) -> p::Priority {
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
    queue: &[Candidate],
    running: &[RunningInfo],
    gpus: Vec<p::Gpu>,
    usage: std::sync::Arc<[p::Usage]>,
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
        queue: queue
            .iter()
            .map(|c| {
                let r = &c.spec.resources;
                p::QueuedTask {
                    id: c.id,
                    name: c.spec.name.clone(),
                    project: c.spec.project.clone(),
                    priority: priority(c.spec.priority),
                    resources: p::Resources {
                        gpus: r.gpus,
                        gpu_mem: r.gpu_mem.map(|m| m.as_u64()),
                        cpus: r.cpus,
                        mem: r.mem.map(|m| m.as_u64()),
                        timeout: r.timeout.map(|t| t.as_millis() as u64),
                    },
                    submitted_at: c.submitted_at,
                    eligible_at: c.eligible_at,
                    attempts: c.attempts.max(0) as u32,
                    estimated_runtime: r.timeout.map(|t| t.as_millis() as u64),
                }
            })
            .collect(),
        running: running
            .iter()
            .map(|t| p::RunningTask {
                id: t.id,
                name: t.name.clone(),
                project: t.project.clone(),
                priority: priority(t.priority),
                gpus: t.gpus.clone(),
                started_at: t.started_at,
                preemptible: t.preemptible,
            })
            .collect(),
        gpus,
        usage,
    }
}

/// The usage a pass shows, from the store's records.
pub fn usage(usage: &[UsageInfo]) -> std::sync::Arc<[p::Usage]> {
    usage.iter().map(usage_of).collect()
}

/// One of the store's usage records as a policy sees it.
pub fn usage_of(u: &UsageInfo) -> p::Usage {
    p::Usage {
        project: u.project.clone(),
        gpus: u.gpus,
        started_at: u.started_at,
        ended_at: u.ended_at,
    }
}
