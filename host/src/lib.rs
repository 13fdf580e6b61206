//! nightjar: a host that lets a lab's GPU machines work through the night.
//!
//! The library holds the mechanism (store, sandbox, daemon, API); the binary in
//! `main.rs` only parses the command line and calls in here.

pub mod config;
pub mod store;
pub mod task;
pub mod time;
