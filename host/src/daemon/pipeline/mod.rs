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
mod chain_restart_tests;
#[cfg(test)]
mod chain_versions_tests;
pub(in crate::daemon) mod combine;
#[cfg(test)]
mod combine_walk_tests;
pub(in crate::daemon) mod dispatch;
pub(in crate::daemon) mod gate;
pub(in crate::daemon) mod health;
pub(in crate::daemon) mod judgements;
pub(in crate::daemon) mod pass;
pub(in crate::daemon) mod policy_pass;
pub(in crate::daemon) mod preempt;
pub(in crate::daemon) mod quota;
pub(in crate::daemon) mod scheduler;
pub(in crate::daemon) mod snapshot;
pub(in crate::daemon) mod sources;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::daemon::condition::Condition;

/// The pipeline's part of the daemon: what the scheduler thread's passes
/// keep between passes, and what they leave for `why` and the watches to
/// read (those fields are `pub(in crate::daemon)`; the rest are the
/// pipeline's alone).
pub struct Parts {
    /// What the API may read of the policy chain (the chain itself lives on
    /// the scheduler thread).
    pub(in crate::daemon) chain_status: Mutex<policy_pass::ChainStatus>,
    /// Requests to the scheduler thread.
    commands: Mutex<std::sync::mpsc::Sender<scheduler::Command>>,
    /// When the chain wants to look again (a deferral's `until`).
    pub(in crate::daemon) policy_wake: Mutex<Option<i64>>,
    /// Waiting reasons set from policy deferrals, to write only changes.
    pub(in crate::daemon) wait_reasons: Mutex<HashMap<i64, String>>,
    /// Why eligible tasks wait for their owner's `[quotas]`.
    pub(in crate::daemon) quota_reasons: Mutex<HashMap<i64, String>>,
    /// Why eligible tasks wait at placement: a stagger, a backfill reservation.
    pub(in crate::daemon) place_reasons: Mutex<HashMap<i64, String>>,
    /// Runtime estimates by name and project.
    estimates: Mutex<backfill::EstimateCache>,
    /// Why no run starts now (`[retention] min_free`), as of the last pass.
    pub(in crate::daemon) start_gate: Mutex<Option<String>>,
    /// Tasks looked up in the result cache since they last ran (`cache.rs`).
    cache_looked: Mutex<HashSet<i64>>,
    /// Scheduling passes that fail, logged per change.
    pass_failures: Condition,
    /// The chain forecasts ask (`query/forecast.rs`): a second copy, so a
    /// forecast never spends the live chain's budget or changes its health.
    pub(in crate::daemon) forecast_chain:
        Mutex<Option<crate::daemon::query::forecast::ForecastChain>>,
    /// One forecast at a time: each plays the whole queue forward (through
    /// the chain, about half a second for a thousand tasks), so callers
    /// queue here rather than load the machine or a second chain.
    pub(in crate::daemon) forecasts: std::sync::Arc<tokio::sync::Semaphore>,
    /// The engine that chain is compiled by (made on the first forecast).
    pub(in crate::daemon) forecast_engine:
        std::sync::OnceLock<Option<crate::plugins::engine::PluginEngine>>,
}

impl Parts {
    /// The pipeline's part, sending its requests on `commands`.
    pub(in crate::daemon) fn new(commands: std::sync::mpsc::Sender<scheduler::Command>) -> Parts {
        Parts {
            chain_status: Mutex::default(),
            commands: Mutex::new(commands),
            policy_wake: Mutex::new(None),
            wait_reasons: Mutex::default(),
            quota_reasons: Mutex::default(),
            place_reasons: Mutex::default(),
            estimates: Mutex::default(),
            start_gate: Mutex::new(None),
            cache_looked: Mutex::default(),
            pass_failures: Condition::new("scheduling pass failed"),
            forecast_chain: Mutex::default(),
            forecasts: std::sync::Arc::new(tokio::sync::Semaphore::new(1)),
            forecast_engine: std::sync::OnceLock::new(),
        }
    }
}
