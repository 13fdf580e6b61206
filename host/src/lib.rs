//! nightjar: a host that lets a lab's GPU machines work through the night.
//!
//! The library holds the mechanism (store, sandbox, daemon, API); the binary in
//! `main.rs` only parses the command line and calls in here.

pub mod api;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod gpu;
pub mod plugins;
pub mod sandbox;
pub mod scheduler;
pub mod store;
pub mod sys;
pub mod task;
pub mod time;
