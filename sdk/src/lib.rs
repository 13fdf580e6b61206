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
//! # let config = <Weekends as nightjar_sdk::Policy>::configure("projects = [\"render\"]").unwrap();
//! # assert_eq!(config.projects, ["render"]);
//! ```
//!
//! The same types are plain Rust values, so policies are unit-tested natively
//! with [`Policy::configure`] (`Weekends::configure(text)` reads a config
//! exactly as the host's would be; every plugin kind has it under that
//! name) and the builders in [`testing`].
//!
//! A policy that moves work by the price of electricity asks the host's
//! tariff with [`tariff::prices`] (natively, a [`tariff::TariffMock`]
//! answers).
//!
//! The SDK builds components against `nightjar:plugin@0.2.3`
//! (`wit/nightjar-plugin@0.2.3`); a policy exports its `delta-policy`:
//! the plugin keeps the snapshot from one pass to the next, the host sends
//! each pass as a change (text once in a string table, tasks named by
//! position; the queue, the running tasks, the GPUs and the usage each by
//! difference, and not at all when unchanged), and scores go back as one
//! column. The SDK keeps and updates
//! the types here (a task's `project` is a `&str`, verdicts name tasks by
//! id), so a pass where little changed costs the plugin little, and
//! [`export_policy!`] writes the version into the component's
//! `nightjar-api-version` custom section, which `nightjar plugins ls` shows.
//!
//! # Result validators
//!
//! A result validator (world `result-validator`) judges a finished run: its
//! configuration is the `[[validate]]` table of a task file (the `plugin`
//! key removed), its logic [`Validator::validate`], a pure function of the
//! configuration and the [`Run`] (the host's record of the run, the list of
//! its output files, and reading them by relative path from the output
//! folder, which the plugin sees read-only at `/output`). It answers
//! [`Finding`]s: [`Finding::error`] fails the run, [`Finding::warning`] and
//! [`Finding::info`] are shown. [`export_validator!`] exports it; natively,
//! [`Validator::configure`] reads a config as the host's would be, and
//! [`testing::OutputDir`] and [`testing::RunBuilder`] make runs to test it
//! against. See [`validator`] for an example.
//!
//! # Notifiers
//!
//! A notifier (world `notifier`) carries events to people: its
//! configuration is its table in the daemon config (secrets resolved by the
//! host), its logic [`Notifier::deliver`], which sends one or several
//! [`Event`]s (several only when the host rate-limits the notifier: send
//! them as one summary) through the host-brokered [`http`] client or
//! [`mail`] and
//! answers `Ok` or a [`DeliveryError`] (transient: the host tries again
//! later; permanent: the events go to the dead letters).
//! [`export_notifier!`] exports it; natively, [`Notifier::configure`] reads
//! a config, [`testing::event`] makes events and [`testing::HttpMock`] and
//! [`testing::MailMock`] stand in for the host's HTTP and mail, so a notifier is unit-tested without
//! wasm. See [`notifier`] for an example.

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/nightjar-plugin@0.2.3",
        world: "delta-scheduling-policy",
        pub_export_macro: true,
        export_macro_name: "__export_scheduling_policy",
        default_bindings_module: "nightjar_sdk::bindings",
        generate_all,
    });
}

/// The bindings of the `result-validator` world. The interfaces both worlds
/// share (`types`, `host`) are the ones of [`bindings`], so there is one
/// [`ConfigError`] and one [`Level`].
#[doc(hidden)]
pub mod validator_bindings {
    wit_bindgen::generate!({
        path: "../wit/nightjar-plugin@0.2.3",
        world: "result-validator",
        pub_export_macro: true,
        export_macro_name: "__export_result_validator",
        default_bindings_module: "nightjar_sdk::validator_bindings",
        with: {
            "nightjar:plugin/types@0.2.3": crate::bindings::nightjar::plugin::types,
            "nightjar:plugin/host@0.2.3": crate::bindings::nightjar::plugin::host,
        },
        generate_all,
    });
}

/// The bindings of the `notifier` world, sharing `types` and `host` with
/// [`bindings`] as [`validator_bindings`] does; its `http` and `mail`
/// imports are what [`http::send`] and [`mail::send`] call on wasm.
#[doc(hidden)]
pub mod notifier_bindings {
    wit_bindgen::generate!({
        path: "../wit/nightjar-plugin@0.2.3",
        world: "notifier",
        pub_export_macro: true,
        export_macro_name: "__export_notifier",
        default_bindings_module: "nightjar_sdk::notifier_bindings",
        with: {
            "nightjar:plugin/types@0.2.3": crate::bindings::nightjar::plugin::types,
            "nightjar:plugin/host@0.2.3": crate::bindings::nightjar::plugin::host,
        },
        generate_all,
    });
}

mod columns;
pub mod config;
mod evaluation;
pub mod http;
mod kept;
pub mod mail;
pub mod notifier;
mod policy;
mod reason;
mod snapshot;
pub mod tariff;
#[cfg(test)]
mod test_lcg;
pub mod testing;
pub mod time;
pub mod usage_edit;
pub mod validator;

/// The contract's own types, as the host sends and reads them (indices
/// into string tables and lists); plugin code uses the SDK's types instead.
#[doc(hidden)]
pub use bindings::exports::nightjar::plugin::delta_policy as abi;

/// The validator interface's own types, as the host sends and reads them;
/// validator code uses [`Run`] and [`Finding`] instead.
#[doc(hidden)]
pub use validator_bindings::exports::nightjar::plugin::validate as validator_abi;

/// The notifier interface's own types, as the host sends and reads them;
/// notifier code uses [`Event`] and [`DeliveryError`] instead.
#[doc(hidden)]
pub use notifier_bindings::exports::nightjar::plugin::notify as notifier_abi;

pub use bindings::nightjar::plugin::host;
pub use bindings::nightjar::plugin::types::{ConfigError, Level, Priority};
pub use evaluation::{ClosedGpu, Deferral, Evaluation, Preemption, TaskVerdict, Verdict};
pub use notifier::{DeliveryError, Event, Field, Notifier};
// The earlier per-kind names of `configure`, kept for plugins that call them.
#[allow(deprecated)]
pub use notifier::configure_notifier;
pub use policy::Policy;
#[allow(deprecated)]
pub use policy::configure;
pub use reason::Reason;
pub use snapshot::{Gpu, QueuedTask, RunningTask, Snapshot, Usage};
#[allow(deprecated)]
pub use validator::configure_validator;
pub use validator::{Finding, OutputFile, Run, Severity, Validator};

#[doc(hidden)]
pub use notifier::private as __private_notifier;
#[doc(hidden)]
pub use policy::private as __private;
#[doc(hidden)]
pub use validator::private as __private_validator;

/// The version of the contract this SDK builds plugins against.
pub const API_VERSION: &str = "0.2.3";

/// The WIT package plugins are written against.
pub const WIT_PACKAGE: &str = "nightjar:plugin@0.2.3";

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
