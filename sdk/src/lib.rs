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
//!         for t in s.queue.iter().filter(|t| config.projects.contains(&t.project)) {
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

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/nightjar-plugin@0.1.0",
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
pub mod testing;
pub mod time;

pub use bindings::exports::nightjar::plugin::policy::{
    ClosedGpu, Deferral, Evaluation, Gpu, Preemption, QueuedTask, RunningTask, Snapshot,
    TaskVerdict, Usage, Verdict,
};
pub use bindings::nightjar::plugin::host;
pub use bindings::nightjar::plugin::types::{ConfigError, Level, Priority, Resources};
pub use policy::{Policy, configure};

#[doc(hidden)]
pub use policy::private as __private;

/// The WIT package plugins are written against.
pub const WIT_PACKAGE: &str = "nightjar:plugin@0.1.0";

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
