//! Preemption in the simulator, as the daemon honours it
//! (`daemon/pipeline/preempt.rs`): a policy's request to stop a run is
//! carried out only when the run is `preemptible`, has run
//! `plugins.preempt_min_runtime`, was not preempted within that time, and
//! a waiting job would start on what it frees. The run ends then (its
//! schedule row says `preempted`); its job queues again for what is left:
//! the whole duration, or, with `checkpoint_s`, what is left after its
//! last whole checkpoint. It does not start again in the pass that
//! preempted it. A request refused for its timing is asked again when it
//! may be honoured.

use super::engine::Sim;

impl Sim<'_> {
    /// Honours the chain's `requests` (task ids) at `now` against the jobs
    /// waiting in `order`; the jobs preempted, to queue again after the pass.
    pub(super) fn preempt(&mut self, requests: &[i64], order: &[usize], now: i64) -> Vec<usize> {
        let min_ms =
            i64::try_from(self.cfg.plugins.preempt_min_runtime.as_millis()).unwrap_or(i64::MAX);
        let mut out = Vec::new();
        for id in requests {
            let Some(k) = (self.runs.running().iter()).position(|r| self.jobs[r.job].id == *id)
            else {
                continue;
            };
            let (i, start) = (self.runs.running()[k].job, self.runs.running()[k].start);
            if !self.jobs[i].preemptible || out.contains(&i) {
                continue;
            }
            let last = self.preempted_at.get(&i).copied();
            let may_at = [Some(start), last]
                .into_iter()
                .flatten()
                .map(|t| t.saturating_add(min_ms))
                .max()
                .unwrap_or(now);
            if may_at > now {
                // Asked again when it may be honoured.
                self.wake = Some(self.wake.map_or(may_at, |w| w.min(may_at)));
                continue;
            }
            let mut pool = self.pool.clone();
            pool.give_back(&self.runs.running()[k].placement);
            let used = (order.iter())
                .filter(|&&w| w != i)
                .any(|&w| pool.place(&self.specs[w].resources).is_some());
            if !used {
                continue;
            }
            let r = self.runs.take(k);
            self.pool.give_back(&r.placement);
            self.busy -= r.placement.gpus.len() as u32;
            self.hold(i, r.placement.gpus.len() as u32, false);
            if let Some(ran) = (self.out.runs.iter_mut()).rfind(|x| x.job == i && x.start == start)
            {
                ran.end = now;
                ran.preempted = true;
            }
            let job = &self.jobs[i];
            let done = job
                .checkpoint
                .filter(|c| *c > 0)
                .map_or(0, |c| (now - start) / c * c);
            self.remaining[i] = self.remaining[i].saturating_sub(done).max(0);
            self.runs.ended(job, start, now);
            self.preempted_at.insert(i, now);
            self.out.preemptions += 1;
            out.push(i);
        }
        out
    }
}
