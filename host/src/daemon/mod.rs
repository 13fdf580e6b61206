//! `nightjar daemon`, laid out by job and by the thread each runs on:
//!
//! - `boot/`: the start (state dir, lock, database checks, `daemon check`
//!   and `daemon recover`), then every job started; the main thread's
//!   signal loop.
//! - `pipeline/`: the scheduling pass on the scheduler thread: fire due
//!   schedules, the start gate, snapshot, chain, combine, order, quotas,
//!   preemption, backfill, the result cache, dispatch.
//! - `run/`: one run from its claim to its end: environment, supervisor,
//!   checkpoints, manifests, the end recorded once and judged, energy, the
//!   watchdog's deadlines (on the runtime).
//! - `watch/`: what the daemon watches outside itself: GPUs, disks, the
//!   wall clock's steps.
//! - `work/`: workers off the scheduler thread: archive, notifications,
//!   digest, retention (the hourly gc on its own thread) and output sweeps.
//! - `query/`: what handlers read that needs more than the store (`why`).
//! - `given.rs`: what the daemon is handed as values (its clock, its
//!   executor, its GPU source), so a simulator or a test can hand others.
//! - Shared by all: `state.rs` (the `Daemon` and its locks, checked by
//!   `locks.rs`), `durable.rs` (flush before telling), `statedir.rs`,
//!   `condition.rs`.

mod boot;
mod condition;
mod durable;
mod given;
#[cfg(test)]
mod given_tests;
mod locks;
mod pipeline;
mod query;
mod run;
pub mod sim;
mod state;
mod statedir;
#[cfg(test)]
pub(crate) mod testkit;
mod watch;
mod work;

pub use self::boot::{Server, consistency, heap, mend, run, run_with};
pub use self::given::{Clock, Given, SystemClock};
pub use self::run::environment;
pub use self::run::executor::{Executor, Launch, Stop};
pub use self::run::local::LocalSupervisor;
pub use self::run::runenv::uses_var;
pub use self::state::Daemon;
pub use nightjar_core::api::views::{GpuView, MemberView};
