//! Version 0.1 of the contract (`wit/nightjar-plugin@0.1.0`, frozen): its
//! bindings, its host imports, and the conversion between the host's model
//! ([`super::model`]) and 0.1's records. The shapes are alike (the model was
//! drawn from 0.1), so each conversion is a field-by-field copy; a 0.1
//! policy gets one converted snapshot per pass (made once, in
//! [`super::pass::Pass::v0_1`]).

use wasmtime::component::{HasSelf, Linker};

use super::model as m;
use super::state::{LogLevel, PluginState};

wasmtime::component::bindgen!({
    path: "../wit/nightjar-plugin@0.1.0",
    world: "scheduling-policy",
});

host_imports!("0.1");

use exports::nightjar::plugin::policy as p;
use nightjar::plugin::types as t;

fn priority(x: m::Priority) -> t::Priority {
    match x {
        m::Priority::Low => t::Priority::Low,
        m::Priority::Normal => t::Priority::Normal,
        m::Priority::High => t::Priority::High,
        m::Priority::Urgent => t::Priority::Urgent,
    }
}

/// The host's snapshot as 0.1's records.
pub fn snapshot(s: &m::Snapshot) -> p::Snapshot {
    p::Snapshot {
        now: s.now,
        time_zone: s.time_zone.clone(),
        utc_offset: s.utc_offset,
        queue: s
            .queue
            .iter()
            .map(|q| p::QueuedTask {
                id: q.id,
                name: q.name.to_string(),
                project: q.project.to_string(),
                priority: priority(q.priority),
                resources: t::Resources {
                    gpus: q.resources.gpus,
                    gpu_mem: q.resources.gpu_mem,
                    cpus: q.resources.cpus,
                    mem: q.resources.mem,
                    timeout: q.resources.timeout,
                },
                submitted_at: q.submitted_at,
                eligible_at: q.eligible_at,
                attempts: q.attempts,
                estimated_runtime: q.estimated_runtime,
            })
            .collect(),
        running: s
            .running
            .iter()
            .map(|r| p::RunningTask {
                id: r.id,
                name: r.name.to_string(),
                project: r.project.to_string(),
                priority: priority(r.priority),
                gpus: r.gpus.clone(),
                started_at: r.started_at,
                preemptible: r.preemptible,
            })
            .collect(),
        gpus: s
            .gpus
            .iter()
            .map(|g| p::Gpu {
                index: g.index,
                uuid: g.uuid.clone(),
                name: g.name.clone(),
                mem_total: g.mem_total,
                mem_used: g.mem_used,
                mem_reserved: g.mem_reserved,
                util: g.util,
                temperature: g.temperature,
                power: g.power,
                healthy: g.healthy,
                closed_by: g.closed_by.clone(),
            })
            .collect(),
        usage: s
            .usage
            .iter()
            .map(|u| p::Usage {
                project: s.project(u).to_string(),
                gpus: u.gpus,
                started_at: u.started_at,
                ended_at: u.ended_at,
            })
            .collect(),
    }
}

/// A 0.1 answer in the host's model (checked by the caller).
pub fn evaluation(e: p::Evaluation) -> m::Evaluation {
    m::Evaluation {
        verdicts: e
            .verdicts
            .into_iter()
            .map(|v| m::TaskVerdict {
                task: v.task,
                verdict: match v.verdict {
                    p::Verdict::Allow(score) => m::Verdict::Allow(score),
                    p::Verdict::Defer(d) => m::Verdict::Defer(m::Deferral {
                        reason: d.reason.into(),
                        until: d.until,
                    }),
                    p::Verdict::Reject(why) => m::Verdict::Reject(why.into()),
                },
            })
            .collect(),
        scores: Vec::new(),
        closed_gpus: e
            .closed_gpus
            .into_iter()
            .map(|c| m::ClosedGpu {
                index: c.index,
                reason: c.reason,
            })
            .collect(),
        preempt: e
            .preempt
            .into_iter()
            .map(|x| m::Preemption {
                task: x.task,
                reason: x.reason,
            })
            .collect(),
    }
}

/// A 0.1 config error in the host's model.
pub fn config_error(e: t::ConfigError) -> m::ConfigError {
    m::ConfigError {
        key: e.key,
        message: e.message,
    }
}
