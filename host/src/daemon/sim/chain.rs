//! The simulator's questions to the policy chain: the snapshot it is
//! given (the queue, the running runs, recent use and the simulated GPUs,
//! built by the daemon's own `snapshot`), its answer combined and ordered as
//! the daemon's passes do it, and the check that a policy is pure.

use std::collections::HashMap;
use std::sync::Arc;

use super::engine::Sim;
use crate::daemon::pipeline::combine::Judgement;
use crate::daemon::pipeline::snapshot;
use crate::plugins::policy as p;

/// One chain pass in this many (after the first three) asks twice, to
/// catch a policy that is not pure.
const CHECK_EVERY: u64 = 256;

/// A simulated idle GPU's temperature, °C.
const IDLE_C: f64 = 35.0;

/// A simulated busy GPU's temperature when its jobs name none, °C.
const BUSY_C: f64 = 65.0;

/// The policy whose verdicts differ between two answers, if one does.
fn first_difference(
    a: &HashMap<(i64, String), (String, String)>,
    b: &HashMap<(i64, String), (String, String)>,
) -> Option<String> {
    let mut differ: Vec<&String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|((_, p), _)| p)
        .chain(b.keys().filter(|k| !a.contains_key(*k)).map(|(_, p)| p))
        .collect();
    differ.sort();
    differ.first().map(|p| p.to_string())
}

/// An error naming the first of a pass's `failures` at `at` ms into the
/// trace, when they end the simulation (`refuse`: [`Sim::refusing_failures`]).
fn failed(refuse: bool, failures: &[(String, String)], at: i64) -> Result<(), String> {
    match failures.first() {
        Some((_, msg)) if refuse => Err(format!(
            "{msg}, at second {} of the trace; nothing is simulated (without it, it would be another chain's answer): fix it, or take it out of plugins.chain",
            at / 1000
        )),
        _ => Ok(()),
    }
}

impl Sim<'_> {
    /// Asks the chain at `now`: the eligible jobs in start order, or `None`
    /// when a failing `closed` policy holds everything this pass. The first
    /// passes, and one in [`CHECK_EVERY`] after, ask twice: policies must be
    /// pure, and one whose two answers differ is refused by name.
    pub(super) fn chain_order(&mut self, now: i64) -> Result<Option<Vec<usize>>, String> {
        self.out.chain_passes += 1;
        let max = self.cfg.plugins.max_queue;
        let t0 = self.opts.start_ms;
        // The last pass's queue edited: only arrivals are made. Names and
        // projects are the jobs' own, shared: no copy.
        let heads: Vec<usize> = self.waiting.iter().take(max).map(|w| w.3).collect();
        let (jobs, specs, ages) = (self.jobs, &self.specs, self.ages.as_deref());
        let make = |i: usize| {
            let job = &jobs[i];
            let at = t0.saturating_add(ages.map_or(job.arrival, |a| a[i]));
            let (name, project) = (Arc::clone(&job.name), Arc::clone(&job.project));
            snapshot::queued_spec(job.id, &specs[i], (at, at), 0, name, project)
        };
        let tasks = self.kept.queue(&heads, jobs.len(), make);
        // The tests check every pass's edited queue against one made afresh.
        #[cfg(test)]
        {
            let fresh: Vec<p::QueuedTask> = heads.iter().map(|&i| make(i)).collect();
            assert!(
                tasks == fresh,
                "pass {}: the kept queue is not the waiting jobs' head",
                self.out.chain_passes
            );
        }
        let running = (self.runs.running().iter())
            .map(|r| {
                let job = &self.jobs[r.job];
                p::RunningTask {
                    id: job.id,
                    name: Arc::clone(&job.name),
                    project: Arc::clone(&job.project),
                    priority: snapshot::priority(job.priority),
                    gpus: r.placement.gpus.clone(),
                    started_at: r.start,
                    preemptible: job.preemptible,
                }
            })
            .collect();
        let usage = self.runs.usage(self.jobs);
        let last = self.kept.take_gpus();
        let gpus = self.gpu_views(last);
        // And its GPU views, updated in place, against views made afresh.
        #[cfg(test)]
        assert!(
            gpus == self.gpu_views(Vec::new()),
            "pass {}: the kept GPU views are not fresh ones",
            self.out.chain_passes
        );
        let snap = Arc::new(snapshot::snapshot(
            self.cfg, now, tasks, running, gpus, usage,
        ));
        self.kept.keep(&snap);
        let refuse = self.refuse_failures;
        let Some(chain) = self.chain.as_deref_mut() else {
            return Ok(None);
        };
        let n = self.out.chain_passes;
        let check = n <= 3 || n.is_multiple_of(CHECK_EVERY);
        // Verdicts are kept only to compare two answers: nothing is explained.
        chain.explain(check);
        let answer = chain.evaluate(Arc::clone(&snap), now);
        failed(refuse, &answer.failures, now - t0)?;
        if check {
            let again = chain.evaluate(snap, now);
            failed(refuse, &again.failures, now - t0)?;
            if let Some(plugin) = first_difference(&answer.verdicts, &again.verdicts) {
                return Err(format!(
                    "policy {plugin} answered the same snapshot twice, differently: its answers depend on something besides the snapshot (a clock, randomness, state kept between calls), so no simulation with it could be repeated; make it pure or take it out of plugins.chain"
                ));
            }
        }
        self.wake = answer.wake_at;
        self.preempt_requests = answer.preempt.iter().map(|(id, _)| *id).collect();
        self.closed_by = answer.closed_by.clone();
        self.pool.policy_closed = answer.closed_gpus.clone().into_iter().collect();
        if answer.hold_all.is_some() {
            return Ok(None);
        }
        // `waiting` is in the built-in order (priority class, then age,
        // then id), which is the start order's tie-break: sorting its
        // eligible jobs by score alone, stably, gives the start order
        // without comparing the rest (the tests check it against
        // `combine::start_order`).
        let waiting = self.waiting.iter().take(max);
        let mut order: Vec<(i64, usize)> = Vec::with_capacity(waiting.len());
        // The snapshot's queue is `waiting`'s head, in its order.
        for (at, &(_, _, id, i)) in waiting.enumerate() {
            match answer.judgements.of(at, id) {
                None => order.push((0, i)),
                Some(Judgement::Eligible(score)) => order.push((*score, i)),
                Some(_) => {}
            }
        }
        order.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
        #[cfg(test)]
        {
            use crate::daemon::pipeline::combine::{self, Ranked};
            let ranked = |&(score, i): &(i64, usize)| Ranked {
                id: self.jobs[i].id,
                score,
                priority: self.specs[i].priority.rank(),
                submitted_at: t0.saturating_add(self.key(i).1),
            };
            let mut full = order.clone();
            full.sort_unstable_by(|a, b| combine::start_order(&ranked(a), &ranked(b)));
            assert!(full == order, "the score sort is not the start order");
        }
        Ok(Some(order.into_iter().map(|(_, i)| i).collect()))
    }

    /// The GPUs as the chain sees them: memory reserved by runs, busy or
    /// idle, and a simple thermal model: 35 °C idle; busy, the hottest
    /// `temp_c` of the jobs on it (65 °C for a job without one). `last`
    /// (the last pass's, when it came back) is updated in place: its
    /// names are not made again each pass.
    fn gpu_views(&self, mut last: Vec<p::Gpu>) -> Vec<p::Gpu> {
        let pool = &self.pool.gpus;
        // Per place in the pool: the power drawn on it and its hottest job.
        let mut draw = vec![0.0f64; pool.len()];
        let mut heat: Vec<Option<f64>> = vec![None; pool.len()];
        let place = |index: u32| match pool.get(index as usize) {
            Some(g) if g.index == index => Some(index as usize),
            _ => pool.iter().position(|g| g.index == index),
        };
        for r in self.runs.running() {
            let job = &self.jobs[r.job];
            let w = job.power_w.unwrap_or(0.0);
            let own = job.temp_c.unwrap_or(BUSY_C);
            for k in r.placement.gpus.iter().filter_map(|&g| place(g)) {
                draw[k] += w;
                heat[k] = Some(heat[k].map_or(own, |t| t.max(own)));
            }
        }
        if last.len() != pool.len() || last.iter().zip(pool).any(|(v, g)| v.index != g.index) {
            last = (pool.iter())
                .map(|g| p::Gpu {
                    index: g.index,
                    uuid: format!("SIM-{}", g.index),
                    name: "simulated GPU".into(),
                    mem_total: 0,
                    mem_used: 0,
                    mem_reserved: 0,
                    util: 0,
                    temperature: 0,
                    power: 0,
                    healthy: true,
                    closed_by: Vec::new(),
                })
                .collect();
        }
        for (k, (v, g)) in last.iter_mut().zip(pool).enumerate() {
            v.mem_total = g.mem_total.unwrap_or(0);
            v.mem_used = g.reserved;
            v.mem_reserved = g.reserved;
            v.util = if g.users > 0 { 100 } else { 0 };
            v.temperature = heat[k].map_or(IDLE_C, |t| t.round()) as u32;
            v.power = (draw[k] * 1000.0) as u32;
            match self.closed_by.get(&g.index) {
                Some(by) if *by != v.closed_by => v.closed_by.clone_from(by),
                Some(_) => {}
                None => v.closed_by.clear(),
            }
        }
        last
    }
}
