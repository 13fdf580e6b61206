//! The daemon's side of the socket. The protocol itself (requests, replies,
//! wire types, version) is `nightjar_core::api`, re-exported here.

pub mod listen;
mod rerun_diff;
pub mod server;

pub use nightjar_core::api::*;
