//! Calling a component of any version the host loads: its linked,
//! pre-instantiated form and its live instance, by version, behind one
//! interface that speaks the host's model (a 0.2 snapshot is taken from the
//! pass, a 0.2 answer read back and checked).

use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

use super::pass::Pass;
use super::policy::{ConfigError, Evaluation, PluginError};
use super::state::PluginState;
use super::version::Adapter;
use super::{delta, incremental, v0_1, v0_2, validate};

/// A component linked against the host imports of its version.
#[derive(Clone)]
pub(super) enum Pre {
    V0_1(v0_1::SchedulingPolicyPre<PluginState>),
    V0_2(v0_2::SchedulingPolicyPre<PluginState>),
    Incremental(incremental::IncrementalSchedulingPolicyPre<PluginState>),
    Delta(delta::DeltaSchedulingPolicyPre<PluginState>),
}

/// A live instance.
pub(super) enum Live {
    V0_1(v0_1::SchedulingPolicy),
    V0_2(v0_2::SchedulingPolicy),
    Incremental(incremental::IncrementalSchedulingPolicy),
    Delta(delta::DeltaSchedulingPolicy),
}

fn world(e: wasmtime::Error) -> PluginError {
    PluginError::World(format!("{e:#}"))
}

impl Pre {
    /// Links `component`, a plugin of version `api`, against WASI and the
    /// host imports of that version: an import the host does not give, or an
    /// export of the wrong shape, is a [`PluginError::World`].
    pub(super) fn new(
        engine: &Engine,
        component: &Component,
        adapter: Adapter,
    ) -> Result<Pre, PluginError> {
        let mut linker: Linker<PluginState> = Linker::new(engine);
        super::wasi::add_to_linker(&mut linker).map_err(world)?;
        match adapter {
            Adapter::V0_1 => v0_1::link(&mut linker),
            Adapter::V0_2 => v0_2::link(&mut linker),
            Adapter::Incremental => incremental::link(&mut linker),
            Adapter::Delta => delta::link(&mut linker),
        }
        .map_err(world)?;
        let pre = linker.instantiate_pre(component).map_err(world)?;
        Ok(match adapter {
            Adapter::V0_1 => Pre::V0_1(v0_1::SchedulingPolicyPre::new(pre).map_err(world)?),
            Adapter::V0_2 => Pre::V0_2(v0_2::SchedulingPolicyPre::new(pre).map_err(world)?),
            Adapter::Incremental => Pre::Incremental(
                incremental::IncrementalSchedulingPolicyPre::new(pre).map_err(world)?,
            ),
            Adapter::Delta => Pre::Delta(delta::DeltaSchedulingPolicyPre::new(pre).map_err(world)?),
        })
    }

    /// A new instance in `store`.
    pub(super) fn instantiate(&self, store: &mut Store<PluginState>) -> wasmtime::Result<Live> {
        Ok(match self {
            Pre::V0_1(pre) => Live::V0_1(pre.instantiate(store)?),
            Pre::V0_2(pre) => Live::V0_2(pre.instantiate(store)?),
            Pre::Incremental(pre) => Live::Incremental(pre.instantiate(store)?),
            Pre::Delta(pre) => Live::Delta(pre.instantiate(store)?),
        })
    }
}

impl Live {
    /// Calls `configure`.
    pub(super) fn configure(
        &self,
        store: &mut Store<PluginState>,
        config: &str,
    ) -> wasmtime::Result<Result<(), ConfigError>> {
        match self {
            Live::V0_1(b) => Ok(b
                .nightjar_plugin_policy()
                .call_configure(store, config)?
                .map_err(v0_1::config_error)),
            Live::V0_2(b) => Ok(b
                .nightjar_plugin_policy()
                .call_configure(store, config)?
                .map_err(|e| ConfigError {
                    key: e.key,
                    message: e.message,
                })),
            Live::Incremental(b) => Ok(b
                .nightjar_plugin_incremental_policy()
                .call_configure(store, config)?
                .map_err(|e| ConfigError {
                    key: e.key,
                    message: e.message,
                })),
            Live::Delta(b) => Ok(b
                .nightjar_plugin_delta_policy()
                .call_configure(store, config)?
                .map_err(|e| ConfigError {
                    key: e.key,
                    message: e.message,
                })),
        }
    }

    /// Calls `evaluate` on `pass`: the outer error is the call's (a trap, a
    /// deadline), the inner one an answer that breaks the contract.
    pub(super) fn evaluate(
        &self,
        store: &mut Store<PluginState>,
        pass: &Pass,
        held: &mut Option<std::sync::Arc<incremental::Held>>,
    ) -> wasmtime::Result<Result<Evaluation, PluginError>> {
        match self {
            Live::V0_1(b) => {
                let e = b
                    .nightjar_plugin_policy()
                    .call_evaluate(store, pass.v0_1())?;
                let e = v0_1::evaluation(e);
                Ok(validate::check_with(pass.ids(), pass.snapshot(), &e).map(|()| e))
            }
            Live::V0_2(b) => {
                let snapshot = match pass.v0_2() {
                    Ok(s) => s,
                    Err(why) => return Ok(Err(PluginError::Snapshot(why.to_string()))),
                };
                let e = b.nightjar_plugin_policy().call_evaluate(store, snapshot)?;
                Ok(v0_2::read(pass.snapshot(), snapshot, e))
            }
            Live::Incremental(b) => incremental::evaluate(b, store, pass, held),
            Live::Delta(b) => delta::evaluate(b, store, pass, held),
        }
    }
}
