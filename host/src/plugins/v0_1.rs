//! Version 0.1 of the contract (`wit/nightjar-plugin@0.1.0`, frozen): its
//! bindings and its host imports. Its snapshot and answer types are also the
//! host's own model of a pass (re-exported by [`super::policy`]; `plugins
//! test` reads them as JSON): a 0.1 plugin gets the snapshot as it is, and
//! every later version is translated from and to these types.

use wasmtime::component::{HasSelf, Linker};

use super::state::{LogLevel, PluginState};

wasmtime::component::bindgen!({
    path: "../wit/nightjar-plugin@0.1.0",
    world: "scheduling-policy",
    additional_derives: [serde::Serialize, serde::Deserialize],
});

use nightjar::plugin::types::Level;

impl nightjar::plugin::types::Host for PluginState {}

impl nightjar::plugin::host::Host for PluginState {
    fn log(&mut self, level: Level, message: String) {
        let level = match level {
            Level::Trace | Level::Debug => LogLevel::Debug,
            Level::Info => LogLevel::Info,
            Level::Warn => LogLevel::Warn,
            Level::Error => LogLevel::Error,
        };
        PluginState::log(self, level, &message);
    }

    fn plugin_name(&mut self) -> String {
        PluginState::plugin_name(self)
    }
}

/// Adds the 0.1 host imports to `linker`.
pub(super) fn link(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    SchedulingPolicy::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
}
