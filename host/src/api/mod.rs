//! The daemon's side of the protocol: [`Api`], the one way into its verbs,
//! and a handler per verb (`handlers/`); the socket's listener and line
//! codec (`listen.rs`, `server.rs`) and its file's permissions
//! (`socket.rs`); and the kind of a failure (`error_kind.rs`). Who may
//! do what is `crate::access`. The protocol itself (requests,
//! replies, wire types, version) is `nightjar_core::api`, re-exported here.

mod error_kind;
mod handle;
pub mod handlers;
#[cfg(test)]
mod inproc;
pub mod listen;
pub mod server;
pub mod socket;

pub use handle::Api;
pub use nightjar_core::api::*;

/// Appends to the audit log.
pub(crate) use handlers::control::audit;
