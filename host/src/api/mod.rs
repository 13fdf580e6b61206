//! The daemon's side of the socket. The protocol itself (requests, replies,
//! wire types, version) is `nightjar_core::api`, re-exported here.

pub mod access;
mod control;
mod error_kind;
pub mod listen;
mod log_chunk;
// `report` alone would hide the protocol's `api::report` module re-exported below.
#[path = "report.rs"]
mod report_handler;
mod rerun_diff;
pub mod server;
mod show;
mod submit;
mod wait;

pub use nightjar_core::api::*;

/// Appends to the audit log (the HTTP API's token verbs use it too).
pub(crate) use control::audit;
