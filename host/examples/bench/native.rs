//! The priority policy compiled natively, for `plugins`' wasm/native
//! ratio: the host's snapshot handed to it in the SDK's types, and its
//! answer put in the host's form, as a wasm policy's answer is read.

/// The same snapshot in the SDK's types, borrowing the host's text: what a
/// policy compiled into the host would be handed.
pub(super) fn sdk_snapshot(s: &nightjar::plugins::policy::Snapshot) -> nightjar_sdk::Snapshot<'_> {
    use nightjar::plugins::policy as p;
    let priority = |p: p::Priority| match p {
        p::Priority::Low => nightjar_sdk::Priority::Low,
        p::Priority::Normal => nightjar_sdk::Priority::Normal,
        p::Priority::High => nightjar_sdk::Priority::High,
        p::Priority::Urgent => nightjar_sdk::Priority::Urgent,
    };
    nightjar_sdk::Snapshot {
        now: s.now,
        time_zone: &s.time_zone,
        utc_offset: s.utc_offset,
        queue: s
            .queue
            .iter()
            .map(|t| nightjar_sdk::QueuedTask {
                id: t.id,
                name: &t.name,
                project: &t.project,
                priority: priority(t.priority),
                gpus: t.resources.gpus,
                gpu_mem: t.resources.gpu_mem,
                submitted_at: t.submitted_at,
                eligible_at: t.eligible_at,
                attempts: t.attempts,
                estimated_runtime: t.estimated_runtime,
            })
            .collect(),
        running: Vec::new(),
        gpus: s
            .gpus
            .iter()
            .map(|g| nightjar_sdk::Gpu {
                index: g.index,
                uuid: &g.uuid,
                name: &g.name,
                mem_total: g.mem_total,
                mem_used: g.mem_used,
                mem_reserved: g.mem_reserved,
                util: g.util,
                temperature: g.temperature,
                power: g.power,
                healthy: g.healthy,
                closed_by: g.closed_by.iter().map(String::as_str).collect(),
            })
            .collect(),
        usage: Vec::new(),
    }
}

/// A native policy's answer as the host's (what combining needs), in the
/// form a wasm policy's answer takes: allows in queue order as one score
/// column, other verdicts named.
pub(super) fn host_answer(
    s: &nightjar::plugins::policy::Snapshot,
    e: nightjar_sdk::Evaluation,
) -> nightjar::plugins::policy::Evaluation {
    use nightjar::plugins::policy as p;
    let reason = |r: nightjar_sdk::Reason| r.as_str().to_string();
    let mut scores = vec![0; s.queue.len()];
    let mut verdicts = Vec::new();
    let mut k = 0;
    for v in e.verdicts {
        let at = (s.queue.get(k..).unwrap_or_default().iter())
            .position(|t| t.id == v.task)
            .map(|d| k + d);
        if let Some(at) = at {
            k = at + 1;
        }
        let verdict = match v.verdict {
            nightjar_sdk::Verdict::Allow(n) => match at {
                Some(at) => {
                    scores[at] = n;
                    continue;
                }
                None => p::Verdict::Allow(n),
            },
            nightjar_sdk::Verdict::Defer(d) => p::Verdict::Defer(p::Deferral {
                reason: reason(d.reason).into(),
                until: d.until,
            }),
            nightjar_sdk::Verdict::Reject(r) => p::Verdict::Reject(reason(r).into()),
        };
        verdicts.push(p::TaskVerdict {
            task: v.task,
            verdict,
        });
    }
    if scores.iter().all(|&n| n == 0) {
        scores.clear();
    }
    p::Evaluation {
        verdicts,
        scores,
        closed_gpus: Vec::new(),
        preempt: Vec::new(),
    }
}
