//! nightjar-sdk: what a plugin author depends on.
//!
//! The export macros, snapshot types and helpers arrive with the plugin-host
//! issue, together with the WIT contract in `wit/`. This crate exists now so
//! the workspace layout is fixed from the start.

/// The WIT package plugins are written against.
pub const WIT_PACKAGE: &str = "nightjar:plugin@0.1.0";
