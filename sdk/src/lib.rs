//! nightjar-sdk: what a plugin author depends on.
//!
//! A scheduling policy is its configuration and its logic. The configuration
//! is a serde type (the SDK parses the host's TOML into it and names the key
//! of any mistake); the logic is [`Policy::evaluate`], a pure function of the
//! configuration and one snapshot:
//!
//! ```
//! use nightjar_sdk::{Evaluation, Policy, Snapshot, time};
//!
//! #[derive(serde::Deserialize, Default)]
//! #[serde(default, deny_unknown_fields)]
//! struct Config {
//!     #[serde(deserialize_with = "nightjar_sdk::config::string_list")]
//!     projects: Vec<String>,
//! }
//!
//! struct Weekends;
//!
//! impl Policy for Weekends {
//!     type Config = Config;
//!     fn evaluate(config: &Config, s: &Snapshot) -> Evaluation {
//!         let mut e = Evaluation::default();
//!         for t in s.queue.iter().filter(|t| config.projects.iter().any(|p| p == t.project)) {
//!             if !time::is_weekend(s) {
//!                 e.defer(t.id, format!("project {} runs at weekends only", t.project), None);
//!             }
//!         }
//!         e
//!     }
//! }
//!
//! nightjar_sdk::export_policy!(Weekends);
//! # let config = nightjar_sdk::configure::<Weekends>("projects = [\"render\"]").unwrap();
//! # assert_eq!(config.projects, ["render"]);
//! ```
//!
//! The same types are plain Rust values, so policies are unit-tested natively
//! with [`configure`] and the builders in [`testing`].
//!
//! The SDK builds components against `nightjar:plugin@0.2.0`
//! (`wit/nightjar-plugin@0.2.0`), whose snapshot is compact: text comes once
//! in a string table and tasks are named by position. The SDK turns that
//! into the types here (a task's `project` is a `&str`, verdicts name tasks
//! by id), and [`export_policy!`] writes the version into the component's
//! `nightjar-api-version` custom section, which `nightjar plugins ls` shows.

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/nightjar-plugin@0.2.0",
        world: "scheduling-policy",
        pub_export_macro: true,
        export_macro_name: "__export_scheduling_policy",
        default_bindings_module: "nightjar_sdk::bindings",
        generate_all,
    });
}

pub mod config;
mod evaluation;
mod policy;
mod reason;
mod snapshot;
pub mod testing;
pub mod time;

/// The contract's own types, as the host sends and reads them (indices
/// into string tables and lists); plugin code uses the SDK's types instead.
#[doc(hidden)]
pub use bindings::exports::nightjar::plugin::policy as wire;

pub use bindings::nightjar::plugin::host;
pub use bindings::nightjar::plugin::types::{ConfigError, Level, Priority};
pub use evaluation::{ClosedGpu, Deferral, Evaluation, Preemption, TaskVerdict, Verdict};
pub use policy::{Policy, configure};
pub use reason::Reason;
pub use snapshot::{Gpu, QueuedTask, RunningTask, Snapshot, Usage};

#[doc(hidden)]
pub use policy::private as __private;

/// The version of the contract this SDK builds plugins against.
pub const API_VERSION: &str = "0.2.0";

/// The WIT package plugins are written against.
pub const WIT_PACKAGE: &str = "nightjar:plugin@0.2.0";

/// The custom section a built plugin carries its [`API_VERSION`] in.
pub const API_VERSION_SECTION: &str = "nightjar-api-version";

/// Logs through the host, tagged with the plugin's name (a no-op off wasm).
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    host::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}

/// The name the host loaded this plugin under, as `plugins.chain` and the
/// snapshot's `closed-by` spell it. Off wasm (native unit tests) there is no
/// host to ask, and it is `fallback`.
pub fn plugin_name(fallback: &str) -> String {
    #[cfg(target_arch = "wasm32")]
    {
        let _ = fallback;
        host::plugin_name()
    }
    #[cfg(not(target_arch = "wasm32"))]
    fallback.to_string()
}
