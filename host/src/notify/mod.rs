//! Notifications: events from the outbox carried to people by notifier
//! plugins, in order per notifier, retried on a schedule that survives
//! restarts, given up on into dead letters, with secrets redacted.

pub mod deliver;
pub mod digest;
pub mod event;
pub mod plugins;
pub mod render;
pub mod worker;
