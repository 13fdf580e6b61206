//! `plugins`: the policy host's costs: compile, cached load, instantiate,
//! one pass of the four first-party policies over a 10,000-task snapshot,
//! and the priority policy as wasm against the same policy compiled natively.
//!
//! A pass starts from the host's snapshot as the daemon builds it: what the
//! pass derives from it (the 0.2 string table and records, the seed) is
//! made inside the timing, once per pass as the daemon's chain does.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::median;

/// A snapshot of `n` queued tasks over 5 projects and 8 GPUs, for the host.
fn host_snapshot(n: usize) -> nightjar::plugins::policy::Snapshot {
    use nightjar::plugins::policy as p;
    let hour = 3_600_000;
    p::Snapshot {
        now: 1_000 * hour,
        time_zone: "UTC".into(),
        utc_offset: 0,
        queue: (0..n)
            .map(|i| p::QueuedTask {
                id: i as i64 + 1,
                name: format!("t{i}"),
                project: format!("p{}", i % 5),
                priority: [
                    p::Priority::Low,
                    p::Priority::Normal,
                    p::Priority::High,
                    p::Priority::Urgent,
                ][i % 4],
                resources: p::Resources {
                    gpus: (i % 2) as u32,
                    gpu_mem: None,
                    cpus: None,
                    mem: None,
                    timeout: Some(hour as u64),
                },
                submitted_at: (i as i64 % 900) * hour,
                eligible_at: (i as i64 % 900) * hour,
                attempts: 0,
                estimated_runtime: Some(hour as u64),
            })
            .collect(),
        running: Vec::new(),
        gpus: (0..8)
            .map(|i| p::Gpu {
                index: i,
                uuid: format!("GPU-{i}"),
                name: "A100".into(),
                mem_total: 80 << 30,
                mem_used: 0,
                mem_reserved: 0,
                util: 0,
                temperature: 40 + i,
                power: 100_000,
                healthy: true,
                closed_by: Vec::new(),
            })
            .collect(),
        usage: Vec::new(),
    }
}

/// The same snapshot in the SDK's types, borrowing the host's text: what a
/// policy compiled into the host would be handed.
fn sdk_snapshot(s: &nightjar::plugins::policy::Snapshot) -> nightjar_sdk::Snapshot<'_> {
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

/// A native policy's answer as the host's (what combining needs).
fn host_answer(e: nightjar_sdk::Evaluation) -> nightjar::plugins::policy::Evaluation {
    use nightjar::plugins::policy as p;
    let reason = |r: nightjar_sdk::Reason| r.as_str().to_string();
    p::Evaluation {
        verdicts: e
            .verdicts
            .into_iter()
            .map(|v| p::TaskVerdict {
                task: v.task,
                verdict: match v.verdict {
                    nightjar_sdk::Verdict::Allow(n) => p::Verdict::Allow(n),
                    nightjar_sdk::Verdict::Defer(d) => p::Verdict::Defer(p::Deferral {
                        reason: reason(d.reason).into(),
                        until: d.until,
                    }),
                    nightjar_sdk::Verdict::Reject(r) => p::Verdict::Reject(reason(r).into()),
                },
            })
            .collect(),
        closed_gpus: Vec::new(),
        preempt: Vec::new(),
    }
}

/// Runs the plugin benchmarks; returns the priority policy's wasm/native
/// ratio per pass.
pub fn plugins() -> Result<f64> {
    use nightjar::plugins::engine::PluginEngine;
    use nightjar::plugins::pass::Pass;
    use nightjar::plugins::policy::{PluginLimits, PolicyPlugin};
    use nightjar_sdk::Policy;
    use std::sync::Arc;
    let wasm = nightjar::plugins::first_party::FIRST_PARTY[0].1;
    let cache = tempfile::tempdir()?;
    let engine = PluginEngine::new(Some(cache.path().to_path_buf()))?;
    let limits = PluginLimits {
        evaluate_timeout: Duration::from_secs(5),
        ..PluginLimits::default()
    };
    let t = Instant::now();
    PolicyPlugin::load(&engine, "priority", wasm, "", limits.clone())
        .map_err(anyhow::Error::msg)?;
    let compile = t.elapsed();
    let t = Instant::now();
    let mut plugin =
        PolicyPlugin::load(&engine, "priority", wasm, "", limits).map_err(anyhow::Error::msg)?;
    let cached_load = t.elapsed();
    let rounds = 200;
    let t = Instant::now();
    for _ in 0..rounds {
        plugin.instantiate().map_err(anyhow::Error::msg)?;
    }
    let instantiate = t.elapsed() / rounds;
    let snap = Arc::new(host_snapshot(10_000));
    let native_config = <priority::PriorityPolicy as nightjar_sdk::Policy>::configure("")
        .map_err(|e| anyhow::anyhow!(e.message))?;
    // The four first-party policies, as a chain would run them.
    let chain: Vec<nightjar::plugins::worker::Worker> = nightjar::plugins::first_party::FIRST_PARTY
        .iter()
        .map(|(name, wasm)| {
            let l = PluginLimits {
                evaluate_timeout: Duration::from_secs(5),
                ..PluginLimits::default()
            };
            nightjar::plugins::worker::Worker::start(&engine, name, wasm.to_vec(), String::new(), l)
                .map_err(anyhow::Error::msg)
        })
        .collect::<Result<_>>()?;
    let mut chain_times = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        // As the daemon's chain runs them: all at once, each answer checked
        // against the snapshot on its worker.
        let pass = Arc::new(Pass::new(Arc::clone(&snap)));
        let pending: Vec<_> = chain.iter().map(|w| w.submit(Arc::clone(&pass))).collect();
        for p in pending {
            p.wait().result.map_err(anyhow::Error::msg)?;
        }
        chain_times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut wasm_times = Vec::new();
    let mut call_times = Vec::new();
    let mut native_times = Vec::new();
    let prepared = Pass::new(Arc::clone(&snap));
    for _ in 0..40 {
        let t = Instant::now();
        let e = plugin
            .evaluate(&Pass::new(Arc::clone(&snap)))
            .map_err(anyhow::Error::msg)?;
        wasm_times.push(t.elapsed().as_secs_f64() * 1e3);
        // The same call with the pass's shared work (the 0.2 snapshot) made.
        let t = Instant::now();
        plugin.evaluate(&prepared).map_err(anyhow::Error::msg)?;
        call_times.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        // The host's snapshot as the policy's types (text borrowed, as the
        // SDK does inside the plugin), the policy, its answer as the host's.
        let n = priority::PriorityPolicy::evaluate(&native_config, &sdk_snapshot(&snap));
        let n = host_answer(n);
        native_times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(n.verdicts.len(), e.verdicts.len());
    }
    let (w, c, n) = (
        median(&wasm_times),
        median(&call_times),
        median(&native_times),
    );
    println!("plugins: the first-party policies");
    println!(
        "  load: compile {:.0} ms, from the on-disk cache {:.1} ms",
        compile.as_secs_f64() * 1e3,
        cached_load.as_secs_f64() * 1e3
    );
    println!(
        "  instantiate + configure from compiled code: {:.0} us (goal < 50 us for instantiation)",
        instantiate.as_secs_f64() * 1e6
    );
    println!(
        "  one pass over 10,000 queued tasks and 8 GPUs (evaluate + validate), priority alone: {w:.2} ms (API {}); the call alone, once the pass's 0.2 snapshot is made: {c:.2} ms",
        plugin.version.api
    );
    println!(
        "  the same pass through the four-policy chain ({}): {:.2} ms (goal < 3 ms)",
        nightjar::plugins::first_party::FIRST_PARTY
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", "),
        median(&chain_times)
    );
    println!(
        "  the same policy compiled natively: {n:.2} ms; wasm/native ratio {:.2} for the pass, {:.2} for the call (goal <= 2)",
        w / n,
        c / n
    );
    Ok(w / n)
}
