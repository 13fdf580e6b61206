//! The scheduling pipeline, run on the scheduler thread only: one pass
//! fires due schedules, checks the start gate, snapshots the queue for the
//! policy chain, combines its answers, applies quotas and preemption, and
//! dispatches in start order with backfill and the result cache.

pub(in crate::daemon) mod backfill;
pub(in crate::daemon) mod cache;
pub(in crate::daemon) mod cache_key;
pub(in crate::daemon) mod chain;
pub(in crate::daemon) mod chain_reload;
#[cfg(test)]
mod chain_versions_tests;
pub(in crate::daemon) mod combine;
pub(in crate::daemon) mod dispatch;
pub(in crate::daemon) mod gate;
pub(in crate::daemon) mod health;
pub(in crate::daemon) mod pass;
pub(in crate::daemon) mod policy_pass;
pub(in crate::daemon) mod preempt;
pub(in crate::daemon) mod quota;
pub(in crate::daemon) mod scheduler;
pub(in crate::daemon) mod snapshot;
pub(in crate::daemon) mod sources;
