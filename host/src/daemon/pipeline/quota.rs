//! `[quotas]` enforced: at submit (tasks waiting) and at dispatch (tasks
//! running, GPUs held), with a reason that names the user, what they use
//! and the config key. A task held back by its owner's quota waits; the
//! reason shows in `ls`, `show` and `why` until it starts.

use crate::access::Caller;
use crate::daemon::state::{Daemon, lock};
use crate::store::{Candidate, Store};

/// More remembered reasons than this and the map is started afresh (tasks
/// cancelled while held back leave theirs behind).
const MAX_REASONS: usize = 100_000;

impl Daemon {
    /// The uid and name a task's quota is counted under.
    fn quota_owner(&self, c: &Candidate) -> (u32, String) {
        match &c.spec.owner {
            Some(o) => (o.uid, o.name.clone()),
            None => (
                self.access.daemon_uid,
                crate::users::name_of(self.access.daemon_uid),
            ),
        }
    }

    /// Why `c` may not start now because of its owner's quota, if so; the
    /// reason is kept for `ls`, `show` and `why` (and dropped once it may).
    pub(in crate::daemon) fn quota_block(&self, c: &Candidate) -> Option<String> {
        if !self.cfg.quotas.any() {
            return None;
        }
        let (uid, name) = self.quota_owner(c);
        let (limits, keys) = self.cfg.quotas.of(&name);
        let (running, gpus) = lock(&self.runs.placed)
            .values()
            .filter(|h| h.owner == uid)
            .fold((0u32, 0u32), |(n, g), h| {
                (n + 1, g + h.placement.gpus.len() as u32)
            });
        let want = c.spec.resources.gpus;
        let why = match (limits.running, limits.gpus) {
            (Some(max), _) if running >= max => Some(format!(
                "quota: {name} has {running} task(s) running; `{}` allows {max}",
                keys.running
            )),
            (_, Some(max)) if want > 0 && gpus + want > max => Some(format!(
                "quota: {name} holds {gpus} GPU(s) and this task asks for {want}; `{}` allows {max}",
                keys.gpus
            )),
            _ => None,
        };
        let mut reasons = lock(&self.pipeline.quota_reasons);
        match &why {
            Some(w) => {
                if reasons.len() >= MAX_REASONS {
                    reasons.clear();
                }
                reasons.insert(c.id, w.clone());
            }
            None => {
                reasons.remove(&c.id);
            }
        }
        why
    }

    /// Refuses a submission of `adding` tasks by `caller` that would take
    /// them past their `queued` quota (`store`: the store, locked).
    pub fn check_queued_quota(
        &self,
        store: &Store,
        caller: &Caller,
        adding: usize,
    ) -> anyhow::Result<()> {
        let (limits, keys) = self.cfg.quotas.of(&caller.name);
        let Some(max) = limits.queued else {
            return Ok(());
        };
        let waiting = store.waiting_of(caller.uid, self.access.daemon_uid)?;
        if waiting + adding > max as usize {
            anyhow::bail!(
                "quota: {} has {waiting} task(s) waiting and this submission adds {adding}; `{}` allows {max}: wait for some to start, cancel some, or ask an administrator",
                caller.name,
                keys.queued
            );
        }
        Ok(())
    }
}
