//! One run, from its claim to its end: the environment built, the
//! supervisor launched and talked to, checkpoints and manifests, the end
//! recorded exactly once and judged (validators, outputs, energy), and the
//! watchdog's own deadlines for supervisors that do not act.

pub(in crate::daemon) mod checkpoint;
pub(in crate::daemon) mod checkpoint_find;
pub(in crate::daemon) mod end;
pub(in crate::daemon) mod energy;
pub mod environment;
pub(in crate::daemon) mod manifest;
pub(in crate::daemon) mod outputs;
pub(in crate::daemon) mod postrun;
pub(in crate::daemon) mod runenv;
pub(in crate::daemon) mod start;
pub(in crate::daemon) mod watchdog;
