//! Running one task: a supervisor process per run, its files, capped logs,
//! cgroups and the kill path.

pub mod cgroup;
pub mod classify;
pub mod container;
pub mod files;
pub mod identity;
pub mod launch;
pub mod liveness;
pub use nightjar_core::runlog as logs;
pub mod paths;
pub mod report;
mod spawn;
pub mod supervisor;
