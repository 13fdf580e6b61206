//! One scheduling pass: fire due recurring tasks, close the start gate when
//! the disk is short, then start what fits in the chain's ranking or the
//! built-in order (`dispatch.rs` is the one path to a start).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Result;

use crate::daemon::pipeline::dispatch::Ranking;
use crate::daemon::state::{Daemon, lock};

impl Daemon {
    /// One scheduling pass: fire due recurring tasks, then start what fits,
    /// in the chain's ranking when one is configured (asked at most every
    /// `dispatch::EVALUATE_EVERY`), else in the built-in order. Both go
    /// through the one dispatch path.
    pub(in crate::daemon) fn pass(
        self: &Arc<Self>,
        chain: Option<&mut crate::daemon::pipeline::chain::Chain>,
        ranking: &mut Option<Ranking>,
    ) -> Result<()> {
        if self.draining.load(Ordering::SeqCst) {
            return Ok(());
        }
        // One line per pass at `NIGHTJAR_LOG=nightjar::pass=trace`: how a
        // test counts that a daemon with nothing to do does not spin.
        tracing::trace!(target: "nightjar::pass", "scheduling pass");
        let now = self.now_ms();
        lock(&self.pool).stagger.now = now;
        let tz = self.cfg.tz();
        let fired = self.store().fire_due(now, |expr, at| {
            crate::task::schedule::parse(expr)
                .ok()
                .and_then(|s| s.next_after(crate::time::to_utc(at), tz))
                .map(|t| t.timestamp_millis())
        })?;
        let mut started = !fired.is_empty();
        let gate = self.start_gate();
        let gated = gate.is_some();
        *lock(&self.pipeline.start_gate) = gate;
        if gated {
            // Nothing starts; the scheduler looks again within seconds.
        } else if self.cfg.plugins.chain.is_empty() {
            started |= self.builtin_pass(now)?;
        } else if let Some(chain) = chain {
            started |= match ranking {
                Some(r) if !r.stale(now) => {
                    // Evaluated moments ago: fill slots from it, and rank
                    // what came since once the batching window ends.
                    let again = r.at + r.window();
                    let mut wake = lock(&self.pipeline.policy_wake);
                    *wake = Some(wake.map_or(again, |w| w.min(again)));
                    drop(wake);
                    self.dispatch_ranked(r, now)?
                }
                _ => self.policy_pass(chain, ranking, now)?,
            };
        }
        if started {
            self.changes.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    /// The built-in order (priority class, then age), paged through the
    /// queue until the slots are full: only tasks that may start are parsed.
    fn builtin_pass(self: &Arc<Self>, now: i64) -> Result<bool> {
        let mut started = false;
        let mut offset = 0;
        let mut easy = self.easy(now);
        loop {
            let free = lock(&self.pool).slots as usize;
            if free == 0 {
                return Ok(started);
            }
            let page = self.store().candidates(now, free, offset)?;
            let d = self.dispatch(page.iter().map(|c| (c, 0)), |_, _| None, &mut easy)?;
            started |= d.started;
            // What did not fit (or waits for a reservation) stays queued and is stepped over.
            offset += d.waiting.len();
            if page.len() < free {
                return Ok(started);
            }
        }
    }
}
