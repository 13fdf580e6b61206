//! One file per verb: what the daemon does for each request, typed (as
//! pueue's message handlers). A request type implements [`Handler`] and its
//! reply is the type the protocol names for it ([`crate::api::Call`]); the
//! socket, the HTTP API, the event streams and the dashboard all reach a
//! handler through [`crate::api::Api::call`], which applies the rules every
//! verb shares (a halted daemon answers only `ping`; a change is answered
//! once it is on disk; an error carries its kind).
//!
//! Shared by several verbs: `control.rs` (who may change a task, and the
//! audit entry), `rerun_diff.rs` (a run's record), `tokens.rs` (minting
//! and looking up API tokens).

use std::future::Future;
use std::sync::Arc;

use crate::access::Caller;
use crate::api::Call;
use crate::daemon::Daemon;

mod audit;
mod cancel;
pub(crate) mod control;
mod diff;
mod forecast;
mod gc;
mod gpu_list;
mod hold;
mod logs;
mod notify_digest;
mod notify_list;
mod notify_retry;
mod notify_test;
mod ping;
mod plugin_list;
mod plugin_reload;
mod priority;
pub mod queue;
mod release;
mod report;
mod rerun;
mod rerun_diff;
mod retry;
mod run_trace;
pub mod runs;
pub mod show;
mod submit;
mod task_count;
mod task_list;
mod token_create;
mod token_list;
mod token_revoke;
pub mod tokens;
mod wait;
mod whoami;
mod why;

/// What the daemon does for one request of type `Self`.
pub trait Handler: Call + Send + 'static {
    /// The reply to this request from `caller`; an error's kind is read
    /// from what it is made of (`api/error_kind.rs`).
    fn handle(
        self,
        d: &Arc<Daemon>,
        caller: &Caller,
    ) -> impl Future<Output = anyhow::Result<Self::Reply>> + Send;
}

/// Runs `f` off the runtime's thread (it reads files, hashes inputs or
/// walks folders); `what` names it if it panics.
async fn blocking<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| {
            // A panic in a handler is the daemon's failure, not the caller's.
            anyhow::Error::from(crate::api::ApiError::new(
                crate::api::ErrorKind::Internal,
                format!("the {what} did not finish: {e}"),
            ))
        })
        .and_then(|r| r)
}

/// Refuses a caller who is not an administrator.
fn admin(d: &Daemon, caller: &Caller, what: &str) -> anyhow::Result<()> {
    Ok(d.access.admin_only(caller, what)?)
}
