//! Version 0.2 of the contract (`wit/nightjar-plugin@0.2.0`): its bindings,
//! its host imports, and the translation between the host's model of a pass
//! and the compact snapshot and answer of 0.2 (text in one string table,
//! tasks and reasons by position).

use wasmtime::component::{HasSelf, Linker};

use super::state::{LogLevel, PluginState};

mod answer;
mod snapshot;

pub use answer::read;
pub use snapshot::{MAX_TEXT, wire};

wasmtime::component::bindgen!({
    path: "../wit/nightjar-plugin@0.2.0",
    world: "scheduling-policy",
});

pub use exports::nightjar::plugin::policy as types;

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

/// Adds the 0.2 host imports to `linker`.
pub(super) fn link(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    SchedulingPolicy::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
}
