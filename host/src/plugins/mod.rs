//! Plugins: the wasmtime engine, limits and loading, and the scheduling-policy
//! host. Every plugin answer is validated here before the scheduler uses it.

pub mod engine;
pub mod limits;
pub mod offline;
pub mod policy;
pub mod sink;
pub mod source;
pub mod validate;
pub mod wasi;
pub mod worker;

#[cfg(test)]
mod containment_tests;
#[cfg(test)]
pub(crate) mod tests;

/// The first-party plugins embedded in the binary: (name, component bytes).
pub mod first_party {
    include!(concat!(env!("OUT_DIR"), "/first_party.rs"));
}
