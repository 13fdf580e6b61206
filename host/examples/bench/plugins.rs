//! `plugins`: the policy host's costs: compile, cached load, instantiate,
//! one pass of the four first-party policies over a 10,000-task snapshot,
//! and the priority policy as wasm against the same policy compiled natively.
//!
//! A pass starts from the host's snapshot as the daemon builds it (a new
//! allocation each pass, in the host's queue order): what the pass derives
//! from it (the change an incremental plugin is sent, or the 0.2 string
//! table and records, the seed) is made inside the timing, once per pass as
//! the daemon's chain does. The plugins keep their snapshot between passes,
//! so three passes are timed: one where nothing changed but the clock, one
//! where 1% of the queue left and 1% arrived, and the first (from nothing).

use std::time::{Duration, Instant};

use anyhow::Result;

use nightjar::plugins::incremental::Kind;
use nightjar::plugins::version::Exported;

use super::median;
use super::native::{host_answer, sdk_snapshot};

/// The form of the changes `plugin` is sent, so the bench can make a
/// pass's change before the call it times.
fn form(plugin: &nightjar::plugins::policy::PolicyPlugin) -> Kind {
    match plugin.version.exported {
        Exported::Delta => Kind::Delta,
        _ => Kind::Incremental,
    }
}

/// A snapshot of `n` queued tasks over 5 projects and 8 GPUs, for the host,
/// its queue in the host's order.
pub(super) fn host_snapshot(n: usize) -> nightjar::plugins::policy::Snapshot {
    let mut s = unordered_snapshot(n);
    s.queue
        .sort_by_key(|t| (std::cmp::Reverse(t.priority), t.submitted_at, t.id));
    s
}

/// `s` one pass later with `churn` of its tasks gone (the first ones: they
/// started) and as many new ones at the back of their class, the clock an
/// hour on.
pub(super) fn churned(
    s: &nightjar::plugins::policy::Snapshot,
    churn: usize,
    round: usize,
) -> nightjar::plugins::policy::Snapshot {
    let mut next = s.clone();
    next.queue.drain(0..churn.min(next.queue.len()));
    let fresh = unordered_snapshot(churn);
    for (k, mut t) in fresh.queue.into_iter().enumerate() {
        t.id = 1_000_000 * (round as i64 + 1) + k as i64;
        t.submitted_at = 10_000 * 3_600_000 + t.id;
        next.queue.push(t);
    }
    next.queue
        .sort_by_key(|t| (std::cmp::Reverse(t.priority), t.submitted_at, t.id));
    next.now += 3_600_000;
    next
}

/// [`host_snapshot`] before it is put in order.
fn unordered_snapshot(n: usize) -> nightjar::plugins::policy::Snapshot {
    use nightjar::plugins::policy as p;
    let hour = 3_600_000;
    p::Snapshot {
        now: 1_000 * hour,
        time_zone: "UTC".into(),
        utc_offset: 0,
        queue: (0..n)
            .map(|i| p::QueuedTask {
                id: i as i64 + 1,
                name: format!("t{i}").into(),
                project: format!("p{}", i % 5).into(),
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
        usage: Vec::new().into(),
        projects: Vec::new().into(),
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
    // The daemon reads a new snapshot each pass: the same content in a new
    // allocation (made before the timing), the clock moved on.
    let passes: Vec<Arc<nightjar::plugins::policy::Snapshot>> = (0..41)
        .map(|i| {
            let mut s = (*snap).clone();
            s.now += i * 1_000;
            Arc::new(s)
        })
        .collect();
    let mut chain_times = Vec::new();
    for s in passes.iter().take(21) {
        let t = Instant::now();
        // As the daemon's chain runs them: all at once, each answer checked
        // against the snapshot on its worker.
        let pass = Arc::new(Pass::new(Arc::clone(s)));
        let pending: Vec<_> = chain.iter().map(|w| w.submit(Arc::clone(&pass))).collect();
        for p in pending {
            p.wait().result.map_err(anyhow::Error::msg)?;
        }
        chain_times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut wasm_times = Vec::new();
    let mut call_times = Vec::new();
    let mut native_times = Vec::new();
    plugin
        .evaluate(&Pass::new(Arc::clone(&passes[0])))
        .map_err(anyhow::Error::msg)?;
    // Each pass's snapshot is made just before it, as the daemon reads one
    // from its database just before the pass: the wasm pass and the native
    // one each get a copy of their own, in turn first.
    // The last few snapshots are kept, and older ones freed between passes:
    // freeing one (20,000 strings) is the daemon's cost whatever the
    // plugins, and is timed on neither side (an incremental plugin's host
    // keeps the previous pass's snapshot, and would free it inside the call).
    let keep = std::cell::RefCell::new(std::collections::VecDeque::new());
    let trim = || {
        let mut k = keep.borrow_mut();
        while k.len() > 6 {
            k.pop_front();
        }
    };
    let fresh = |i: usize| {
        let mut s = (*snap).clone();
        s.now += i as i64 * 1_000;
        let s = Arc::new(s);
        keep.borrow_mut().push_back(Arc::clone(&s));
        s
    };
    for i in 1..41 {
        let mut wasm_pass = || -> Result<usize> {
            let s = fresh(i);
            let t = Instant::now();
            let e = plugin
                .evaluate(&Pass::new(Arc::clone(&s)))
                .map_err(anyhow::Error::msg)?;
            wasm_times.push(t.elapsed().as_secs_f64() * 1e3);
            Ok(e.all_verdicts(&s.queue).len())
        };
        let mut native_pass = || {
            let s = fresh(i);
            let t = Instant::now();
            // The host's snapshot as the policy's types (text borrowed, as
            // the SDK does inside the plugin), the policy, its answer as the
            // host's.
            let n = priority::PriorityPolicy::evaluate(&native_config, &sdk_snapshot(&s));
            let n = host_answer(&s, n);
            native_times.push(t.elapsed().as_secs_f64() * 1e3);
            n.all_verdicts(&s.queue).len()
        };
        let (w, n) = if i % 2 == 0 {
            let n = native_pass();
            (wasm_pass()?, n)
        } else {
            (wasm_pass()?, native_pass())
        };
        assert_eq!(w, n);
        // The same call with the pass's shared work (the change) made.
        let prepared = Pass::new(fresh(i));
        let _ = prepared.change(plugin.held_for_bench(), form(&plugin));
        let t = Instant::now();
        plugin.evaluate(&prepared).map_err(anyhow::Error::msg)?;
        call_times.push(t.elapsed().as_secs_f64() * 1e3);
        drop(prepared);
        trim();
    }
    // 1% of the queue gone and as many new, each pass.
    let mut churn_times = Vec::new();
    let mut churn_native = Vec::new();
    let mut churn_change = Vec::new();
    let mut s = (*snap).clone();
    for round in 0..40 {
        s = churned(&s, 100, round);
        let shared = Arc::new(s.clone());
        keep.borrow_mut().push_back(Arc::clone(&shared));
        // The host's change (made once a pass, for every plugin) timed
        // apart from the call that sends and applies it.
        let t = Instant::now();
        let pass = Pass::new(Arc::clone(&shared));
        let _ = pass.change(plugin.held_for_bench(), form(&plugin));
        let change = t.elapsed().as_secs_f64() * 1e3;
        let e = plugin.evaluate(&pass).map_err(anyhow::Error::msg)?;
        churn_times.push(t.elapsed().as_secs_f64() * 1e3);
        churn_change.push(change);
        drop(pass);
        let t = Instant::now();
        let n = host_answer(
            &shared,
            priority::PriorityPolicy::evaluate(&native_config, &sdk_snapshot(&shared)),
        );
        churn_native.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(n, e, "the wasm and the native answers agree");
        drop(shared);
        trim();
    }
    // The first pass of an instance: the whole snapshot.
    let mut first_times = Vec::new();
    for _ in 0..10 {
        plugin.instantiate().map_err(anyhow::Error::msg)?;
        let t = Instant::now();
        plugin
            .evaluate(&Pass::new(Arc::clone(&passes[0])))
            .map_err(anyhow::Error::msg)?;
        first_times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (w, c, n) = (
        median(&wasm_times),
        median(&call_times),
        median(&native_times),
    );
    let (cw, cn) = (median(&churn_times), median(&churn_native));
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
        "  one pass over 10,000 queued tasks and 8 GPUs (evaluate + validate), priority alone (API {}{}), the queue unchanged: {w:.2} ms; the call alone, once the pass's change is made: {c:.2} ms",
        plugin.version.api,
        match plugin.version.exported {
            Exported::Policy => "",
            Exported::Incremental => ", incremental",
            Exported::Delta => ", delta",
        }
    );
    println!(
        "  the same with 1% of the queue new each pass: {cw:.2} ms (the host's change {:.2} ms of it), native {cn:.2} ms, ratio {:.2}; an instance's first pass (the whole snapshot): {:.2} ms",
        median(&churn_change),
        cw / cn,
        median(&first_times)
    );
    println!(
        "  the same pass through every first-party policy at once ({}): {:.2} ms (goal < 3 ms)",
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
