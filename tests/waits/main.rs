//! End-to-end tests whose time is waiting, not computing: a real minute
//! (the retention timer's first collection, the WeChat bot's rate limit of
//! 20 a minute) or a real build (a plugin crate made by `plugins new`). A
//! target of their own, with the e2e target's harness, so `scripts/test`
//! starts them beside everything else rather than late in the e2e target's
//! name order, where they made its tail. `cargo test` alone leaves them out
//! (`test = false`); `cargo test --test waits` runs them.

// A test's helpers unwrap as its `#[test]` functions do (clippy.toml
// allows it only inside those): a panic is the test failing.
#![allow(clippy::unwrap_used)]

// The harness is shared with the e2e target; this one uses part of it.
#[allow(dead_code)]
#[path = "../e2e/harness.rs"]
mod harness;

mod notify_wecom;
mod plugin_new;
mod retention_timer;
