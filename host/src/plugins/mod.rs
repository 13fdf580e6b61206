//! Plugins: the wasmtime engine, limits and loading, and the scheduling-policy
//! host. Every plugin answer is validated here before the scheduler uses it.

pub mod engine;
pub mod policy;
pub mod sink;
pub mod validate;

#[cfg(test)]
mod tests;

/// The first-party plugins embedded in the binary: (name, component bytes).
pub mod first_party {
    include!(concat!(env!("OUT_DIR"), "/first_party.rs"));
}
