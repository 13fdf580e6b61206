//! nightjar-sdk: what a plugin author depends on.
//!
//! A scheduling policy is a type implementing [`Policy`], exported with
//! [`export_policy!`](crate::export_policy):
//!
//! ```ignore
//! use nightjar_sdk::*;
//!
//! struct Weekends;
//!
//! impl Policy for Weekends {
//!     fn configure(_config: String) -> Result<(), ConfigError> { Ok(()) }
//!     fn evaluate(s: Snapshot) -> Evaluation {
//!         let mut e = Evaluation::default();
//!         for t in &s.queue {
//!             if t.project == "render" && !time::is_weekend(&s) {
//!                 e.defer(t.id, "project render runs at weekends only", None);
//!             }
//!         }
//!         e
//!     }
//! }
//!
//! export_policy!(Weekends);
//! ```
//!
//! The same types are plain Rust values, so policies are unit-tested natively
//! with the builders in [`testing`].

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "scheduling-policy",
        pub_export_macro: true,
        export_macro_name: "__export_scheduling_policy",
        default_bindings_module: "nightjar_sdk::bindings",
        generate_all,
    });
}

pub mod time;
pub mod testing;

pub use bindings::exports::nightjar::plugin::policy::{
    ClosedGpu, Deferral, Evaluation, Gpu, Guest as Policy, Preemption, QueuedTask, RunningTask,
    Snapshot, TaskVerdict, Usage, Verdict,
};
pub use bindings::nightjar::plugin::host;
pub use bindings::nightjar::plugin::types::{ConfigError, Level, Priority, Resources};

/// The WIT package plugins are written against.
pub const WIT_PACKAGE: &str = "nightjar:plugin@0.1.0";

/// Exports a [`Policy`] implementation as the plugin's `policy` interface
/// (on wasm only: natively the same crate builds for unit tests).
#[macro_export]
macro_rules! export_policy {
    ($t:ident) => {
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_scheduling_policy!($t with_types_in $crate::bindings);
    };
}

impl Default for Evaluation {
    fn default() -> Self {
        Evaluation { verdicts: Vec::new(), closed_gpus: Vec::new(), preempt: Vec::new() }
    }
}

impl Evaluation {
    /// Allows a task with a score (higher starts first).
    pub fn allow(&mut self, task: i64, score: i32) {
        self.verdicts.push(TaskVerdict { task, verdict: Verdict::Allow(score) });
    }

    /// Defers a task with a reason, optionally until a time (Unix ms).
    pub fn defer(&mut self, task: i64, reason: impl Into<String>, until: Option<i64>) {
        self.verdicts.push(TaskVerdict {
            task,
            verdict: Verdict::Defer(Deferral { reason: reason.into(), until }),
        });
    }

    /// Rejects a task for good under this policy.
    pub fn reject(&mut self, task: i64, reason: impl Into<String>) {
        self.verdicts.push(TaskVerdict { task, verdict: Verdict::Reject(reason.into()) });
    }

    /// Closes a GPU to new work.
    pub fn close_gpu(&mut self, index: u32, reason: impl Into<String>) {
        self.closed_gpus.push(ClosedGpu { index, reason: reason.into() });
    }

    /// Asks the host to stop a running task and requeue it.
    pub fn preempt(&mut self, task: i64, reason: impl Into<String>) {
        self.preempt.push(Preemption { task, reason: reason.into() });
    }
}

/// Logs through the host, tagged with the plugin's name (a no-op off wasm).
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    host::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}
