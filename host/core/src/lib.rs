//! What the nightjar client and daemon share, and nothing that needs the
//! daemon's machinery (no wasmtime, no SQLite): the socket protocol and its
//! wire types, the task-file model, times, and where the state lives.

#[cfg(target_env = "musl")]
pub mod alloc;
pub mod api;
pub mod client;
pub mod humantime_serde_compat;
pub mod paths;
pub mod plain_file;
pub mod runlog;
pub mod runlog_read;
pub mod task;
pub mod time;
