//! nightjar: a host that lets a lab's GPU machines work through the night.
//!
//! This library is the daemon: store, sandbox, GPU monitor, plugin host,
//! scheduler and the socket's server side. What the client shares with it
//! (protocol, task files, times, paths) is the `nightjar-core` crate; the
//! `nightjar` command line is `nightjar-cli`, which links neither wasmtime
//! nor SQLite. Binaries: `nightjar` (the CLI), `nightjard` (the daemon and
//! the offline plugin checks), `nightjar-supervise` (one per run).

pub mod access;
pub mod api;
pub mod archive;
pub mod config;
pub mod daemon;
pub mod gpu;
pub mod http;
pub mod manifest;
pub mod metrics;
pub mod nightjard;
pub mod notify;
pub mod plugins;
pub mod postrun;
pub mod privsep;
pub mod report;
pub mod sandbox;
pub mod scheduler;
pub mod secrets;
pub mod store;
pub mod sync;
pub mod tariff;
pub mod users;
pub mod web;
pub use nightjar_core::{task, time};
/// Thin safe wrappers over the Linux calls the daemon and its supervisors make.
pub use nightjar_supervise::sys;

#[cfg(test)]
mod docs_tests;
#[cfg(test)]
mod layering_tests;
