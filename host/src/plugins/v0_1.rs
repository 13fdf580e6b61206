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

host_imports!("0.1");
