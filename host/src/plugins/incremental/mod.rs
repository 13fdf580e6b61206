//! The incremental policy of contract 0.2.2 (`incremental-scheduling-policy`):
//! the plugin keeps the snapshot between passes, the host sends each pass as
//! a change from the one the plugin holds ([`feed`]), and scores come back
//! as one column ([`answer`]). Its `host` and `tariff` imports are 0.2's,
//! linked once. 0.2.3's delta policy (`plugins::delta`) is fed and read by
//! the same code, its running tasks and GPUs also by difference ([`parts`]).

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker};

use super::pass::Pass;
use super::policy::{Evaluation, PluginError};
use super::state::PluginState;

pub(super) mod answer;
pub mod diff;
pub mod feed;
pub mod parts;

pub use feed::{Change, Held};
pub use parts::{Kind, Wire};

wasmtime::component::bindgen!({
    path: "../wit/nightjar-plugin@0.2.3",
    world: "incremental-scheduling-policy",
    with: {
        "nightjar:plugin/types": super::v0_2::nightjar::plugin::types,
        "nightjar:plugin/host": super::v0_2::nightjar::plugin::host,
        "nightjar:plugin/tariff": super::v0_2::nightjar::plugin::tariff,
    },
});

pub use exports::nightjar::plugin::incremental_policy as types;

/// Adds the imports of the incremental world (0.2's `host` and `tariff`) to
/// `linker`.
pub(super) fn link(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    IncrementalSchedulingPolicy::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
}

/// Calls `evaluate` on `live` with this pass's change from `held` (what the
/// instance holds), and updates `held` to what it holds after: the new
/// generation when the answer confirms it and reads as valid, nothing
/// otherwise (the next call starts from nothing). A plugin that answers that
/// it does not hold the base is sent the whole snapshot at once.
pub(super) fn evaluate(
    live: &IncrementalSchedulingPolicy,
    store: &mut Store<PluginState>,
    pass: &Pass,
    held: &mut Option<Arc<Held>>,
) -> wasmtime::Result<Result<Evaluation, PluginError>> {
    let policy = live.nightjar_plugin_incremental_policy();
    let call = |store: &mut Store<PluginState>, change: &Change| match &change.wire {
        Wire::Incremental(wire) => policy.call_evaluate(store, wire).map(Some),
        Wire::Delta(_) => Ok(None),
    };
    exchange(store, pass, held, Kind::Incremental, call)
}

/// One pass's exchange with a plugin keeping its snapshot, of either form:
/// the change from what it holds, sent again from nothing when it answers
/// that it does not hold the base; its answer read and checked, and `held`
/// set to what it holds after (nothing unless the answer is valid).
/// `call` answers `None` for a change of the other form (never made).
pub(super) fn exchange(
    store: &mut Store<PluginState>,
    pass: &Pass,
    held: &mut Option<Arc<Held>>,
    kind: Kind,
    call: impl Fn(&mut Store<PluginState>, &Change) -> wasmtime::Result<Option<types::Evaluation>>,
) -> wasmtime::Result<Result<Evaluation, PluginError>> {
    let base = held.take();
    let wrong = || PluginError::Snapshot("a change of the other contract form was made".into());
    let mut change = match pass.change(base.as_ref(), kind) {
        Ok(c) => c,
        Err(why) => return Ok(Err(PluginError::Snapshot(why))),
    };
    let Some(mut e) = call(&mut *store, &change)? else {
        return Ok(Err(wrong()));
    };
    if e.generation == 0 && change.base() != 0 {
        // Its randomness starts again from the snapshot's seed, as in any
        // call: what it drew before it answered is not carried into this.
        store.data().rng.seed_lazily(pass.seed_source());
        change = match pass.change(None, kind) {
            Ok(c) => c,
            Err(why) => return Ok(Err(PluginError::Snapshot(why))),
        };
        let Some(again) = call(&mut *store, &change)? else {
            return Ok(Err(wrong()));
        };
        e = again;
    }
    if e.generation != change.held.generation {
        return Ok(Err(PluginError::Invalid(format!(
            "answers for snapshot {}, but was sent snapshot {}",
            e.generation, change.held.generation
        ))));
    }
    let read = answer::read(pass.snapshot(), e);
    if read.is_ok() {
        *held = Some(Arc::clone(&change.held));
    }
    Ok(read)
}

#[cfg(test)]
mod tests;
