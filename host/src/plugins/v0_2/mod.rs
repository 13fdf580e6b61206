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

host_imports!("0.2");
