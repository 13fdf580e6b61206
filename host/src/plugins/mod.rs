//! Plugins: the wasmtime engine, limits and loading, and the scheduling-policy
//! host for every version of the contract it loads (`wit/nightjar-plugin@0.1.0`
//! and `@0.2.0`). Every plugin answer is validated here before the scheduler
//! uses it.

mod dispatch;
pub mod engine;
pub mod limits;
pub mod offline;
pub mod pass;
pub mod policy;
pub mod sink;
pub mod source;
mod state;
pub mod v0_1;
pub mod v0_2;
pub mod validate;
pub mod version;
pub mod wasi;
pub mod worker;

#[cfg(test)]
mod containment_tests;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod versions_tests;

/// The first-party plugins embedded in the binary: (name, component bytes).
pub mod first_party {
    include!(concat!(env!("OUT_DIR"), "/first_party.rs"));
}
