//! Plugins: the wasmtime engine, limits and loading, and the scheduling-policy
//! host for every version of the contract it loads (`wit/nightjar-plugin@0.1.0`,
//! `@0.2.0`, `@0.2.1`, `@0.2.2`, whose incremental policy is sent each pass
//! as a change: `incremental/`, and `@0.2.3`, whose delta policy is sent
//! every part of it by difference: `delta/`). Every plugin answer is
//! validated here before the scheduler uses it.

/// The host imports every contract version declares alike (`log`,
/// `plugin-name`) and its `link`, for the bindings generated in the module
/// that invokes it: the traits differ per version, the behaviour does not.
macro_rules! host_imports {
    ($version:literal) => {
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

        #[doc = concat!("Adds the ", $version, " host imports to `linker`.")]
        pub(super) fn link(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
            SchedulingPolicy::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
        }
    };
}

pub mod budget;
pub mod cache;
pub mod compile;
pub mod delta;
pub mod engine;
mod error;
pub mod helper;
pub mod incremental;
mod versioned;

/// The sha256 of `bytes`, as 64 lowercase hex digits (a plugin's identity
/// in `plugins ls`, caches and messages).
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}
pub mod limits;
pub mod model;
pub mod notifier;
pub mod offline;
pub mod pass;
pub mod policy;
mod seed;
pub mod sink;
pub mod source;
mod state;
mod usage_model;
pub mod v0_1;
pub mod v0_2;
pub mod validate;
pub mod validator;
pub mod version;
pub mod wasi;
pub mod worker;

#[cfg(test)]
mod containment_tests;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod versions_tests;
#[cfg(test)]
mod wit_frozen_tests;

/// The first-party plugins embedded in the binary: (name, component bytes).
pub mod first_party {
    include!(concat!(env!("OUT_DIR"), "/first_party.rs"));
}
