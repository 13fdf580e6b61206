//! Running one task: the supervisor's side is the `nightjar-supervise`
//! crate (its files, capped logs, cgroups, the kill path), re-exported
//! here; the daemon's side is starting supervisors and finding out later
//! whether they live.

pub use nightjar_core::runlog as logs;
pub use nightjar_supervise::{
    cgroup, classify, container, files, identity, lock, paths, report, supervisor,
};
pub mod launch;
pub mod liveness;
