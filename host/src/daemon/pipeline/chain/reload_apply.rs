//! What a reload changes in a chain: the members whose file changed, and
//! putting in place what the reload started (`chain_reload.rs` starts them
//! off the scheduler thread).

use nightjar_core::api::{ReloadChange, ReloadOutcome};

use super::Chain;
use crate::config::Config;
use crate::daemon::boot::startup::named;
use crate::daemon::pipeline::sources::{sha256, source_of};

impl Chain {
    /// The members whose file changed (or that are disabled), with what a
    /// reload would start them from.
    pub(in crate::daemon) fn changed(
        &self,
        cfg: &Config,
    ) -> Vec<crate::daemon::pipeline::chain_reload::Changed> {
        let mut out = Vec::new();
        for (index, m) in self.members.iter().enumerate() {
            let (source, wasm) = source_of(cfg, &m.name);
            let sha = wasm.as_ref().ok().map(|w| sha256(w));
            let running = m.loaded.as_ref().map(|l| &l.sha256);
            if running == sha.as_ref() && m.source == source && !m.disabled {
                continue;
            }
            out.push(crate::daemon::pipeline::chain_reload::Changed {
                index,
                name: m.name.clone(),
                source,
                wasm,
            });
        }
        out
    }

    /// Puts in place what a reload started: a member that started replaces
    /// the old one; one that failed leaves the old one running and says why.
    pub(in crate::daemon) fn apply(
        &mut self,
        started: Vec<crate::daemon::pipeline::chain_reload::Started>,
    ) -> Vec<ReloadChange> {
        let mut changes = Vec::new();
        for s in started {
            let (i, name, source) = (s.index, s.name, s.source);
            if self.members.get(i).is_none_or(|m| m.name != name) {
                continue;
            }
            match s.result {
                Ok((worker, loaded)) => {
                    let m = &mut self.members[i];
                    m.worker = Some(std::sync::Arc::new(worker));
                    m.loaded = Some(loaded);
                    m.source = source;
                    m.disabled = false;
                    m.health.reset();
                    m.last_error = None;
                    changes.push(ReloadChange {
                        plugin: name.clone(),
                        outcome: ReloadOutcome::Loaded,
                        detail: m.source.clone(),
                    });
                }
                Err(e) => {
                    let e = named(&source, &e);
                    let m = &mut self.members[i];
                    let kept = if m.worker.is_some() || m.loaded.is_some() {
                        "; the previous version keeps running"
                    } else {
                        ""
                    };
                    m.last_error = Some(format!("new version rejected: {e}{kept}"));
                    changes.push(ReloadChange {
                        plugin: name.clone(),
                        outcome: ReloadOutcome::Rejected,
                        detail: format!("{e}{kept}"),
                    });
                }
            }
        }
        changes
    }

    /// Sets a forecast's copy of the chain as the scheduler's chain stands:
    /// each member that runs starts with no failures counted, disabled only
    /// where the scheduler's member is (`live_disabled`, by name). A
    /// forecast so neither inherits the failures an earlier forecast
    /// counted (which disabled a member in every later one, until its file
    /// changed, whatever the scheduler did) nor asks a policy the
    /// scheduler no longer asks.
    pub(in crate::daemon) fn mirror(&mut self, live_disabled: &[String]) {
        for m in self.members.iter_mut().filter(|m| m.loaded.is_some()) {
            m.health.reset();
            m.disabled = live_disabled.contains(&m.name);
            m.last_error = m.disabled.then(|| {
                "disabled in the scheduler's chain until it is reloaded (`nightjar plugins ls`)"
                    .to_string()
            });
        }
    }
}
