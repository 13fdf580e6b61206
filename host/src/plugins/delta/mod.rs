//! The delta policy of contract 0.2.3 (`delta-scheduling-policy`): 0.2.2's
//! incremental policy with the running tasks and GPUs also sent by
//! difference, as columns, and each unchanged part of a change left out.
//! The change is made and the answer read by `plugins::incremental`; this
//! module binds the world and moves the answer into the incremental form,
//! which is the same record field for field. Its `host` and `tariff`
//! imports are 0.2's, linked once.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker};

use super::incremental::{self, Held, Kind, Wire};
use super::pass::Pass;
use super::policy::{Evaluation, PluginError};
use super::state::PluginState;

wasmtime::component::bindgen!({
    path: "../wit/nightjar-plugin@0.2.3",
    world: "delta-scheduling-policy",
    with: {
        "nightjar:plugin/types": super::v0_2::nightjar::plugin::types,
        "nightjar:plugin/host": super::v0_2::nightjar::plugin::host,
        "nightjar:plugin/tariff": super::v0_2::nightjar::plugin::tariff,
    },
});

pub use exports::nightjar::plugin::delta_policy as types;

use incremental::types as w;
use types as d;

/// Adds the imports of the delta world (0.2's `host` and `tariff`) to
/// `linker`.
pub(super) fn link(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    DeltaSchedulingPolicy::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
}

/// Calls `evaluate` on `live` with this pass's change from `held`, as
/// `incremental::evaluate` does for 0.2.2.
pub(super) fn evaluate(
    live: &DeltaSchedulingPolicy,
    store: &mut Store<PluginState>,
    pass: &Pass,
    held: &mut Option<Arc<Held>>,
) -> wasmtime::Result<Result<Evaluation, PluginError>> {
    let policy = live.nightjar_plugin_delta_policy();
    let call = |store: &mut Store<PluginState>, change: &incremental::Change| match &change.wire {
        Wire::Delta(wire) => policy.call_evaluate(store, wire).map(|e| Some(answer(e))),
        Wire::Incremental(_) => Ok(None),
    };
    incremental::exchange(store, pass, held, Kind::Delta, call)
}

/// The answer in the incremental form (the same fields; nothing copied).
fn answer(e: d::Evaluation) -> w::Evaluation {
    w::Evaluation {
        generation: e.generation,
        reasons: e.reasons,
        scores: e.scores,
        deferred: w::Deferrals {
            task: e.deferred.task,
            reason: e.deferred.reason,
            until: e.deferred.until,
        },
        rejected: w::Rejections {
            task: e.rejected.task,
            reason: e.rejected.reason,
        },
        closed_gpus: (e.closed_gpus.into_iter())
            .map(|c| w::ClosedGpu {
                index: c.index,
                reason: c.reason,
            })
            .collect(),
        preempt: (e.preempt.into_iter())
            .map(|p| w::Preemption {
                task: p.task,
                reason: p.reason,
            })
            .collect(),
    }
}
