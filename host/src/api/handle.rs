//! [`Api`]: the one way into the daemon's verbs. The socket, the HTTP API,
//! the event streams and every dashboard page call [`Api::call`] with a
//! typed request and get its typed reply (the socket and HTTP encode it;
//! in-process callers use it as it is, with no JSON in between). The rules
//! every verb shares are applied here, once:
//!
//! - a halted daemon answers nothing but `ping`, saying why and what to do;
//! - a change is answered only once it is on disk (`daemon/durable.rs`); a
//!   request that only reads ([`Call::READS_ONLY`]) is answered without
//!   waiting for the store's flush (a writer may be waiting on a busy
//!   database behind it);
//! - an error carries its kind: the caller's mistake or the daemon's
//!   failure (`error_kind.rs`).

use std::sync::Arc;

use super::handlers::Handler;
use super::{ApiError, Call, ErrorKind};
use crate::access::{Access, Caller};
use crate::config::Config;
use crate::daemon::Daemon;

/// The daemon's verbs, as every front end calls them.
#[derive(Clone)]
pub struct Api {
    d: Arc<Daemon>,
}

impl Api {
    /// The verbs of daemon `d`.
    pub fn new(d: Arc<Daemon>) -> Api {
        Api { d }
    }

    /// The reply to `req` from `caller`, or the error with its kind.
    pub async fn call<C: Handler>(&self, caller: &Caller, req: C) -> Result<C::Reply, ApiError> {
        let ping = C::VERB == <super::Ping as Call>::VERB;
        if let Some(why) = self.d.halted()
            && !ping
        {
            return Err(halted(why));
        }
        let reply = req.handle(&self.d, caller).await;
        if !C::READS_ONLY && !self.d.flushed() {
            let me = Arc::clone(&self.d);
            let ok = tokio::task::spawn_blocking(move || me.durable())
                .await
                .unwrap_or(false);
            if !ok {
                return Err(halted(
                    self.d
                        .halted()
                        .unwrap_or("the database's log could not be flushed"),
                ));
            }
        }
        reply.map_err(super::error_kind::classify)
    }

    /// The daemon's configuration (as it started: the config is read at
    /// start only).
    pub fn config(&self) -> &Config {
        &self.d.cfg
    }

    /// Why the daemon halted, if it did (it then answers nothing but `ping`).
    pub fn halted(&self) -> Option<&str> {
        self.d.halted()
    }

    /// Who may do what.
    pub fn access(&self) -> &Access {
        &self.d.access
    }

    /// A receiver that sees each change of the queue (a counter).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.d.changes.subscribe()
    }

    /// Top-level tasks by state, for the event stream's `changed` events
    /// (none when the store cannot say).
    pub fn state_counts(&self) -> Vec<(String, i64)> {
        self.d.store().state_counts().unwrap_or_default()
    }

    /// The daemon's metrics as OpenMetrics text (`GET /metrics`); blocking,
    /// so it runs on a blocking thread.
    pub async fn metrics(&self) -> anyhow::Result<String> {
        let d = Arc::clone(&self.d);
        tokio::task::spawn_blocking(move || d.metrics_text())
            .await
            .map_err(|e| anyhow::anyhow!("the metrics' reading did not finish: {e}"))?
    }

    /// The uid a live API token belongs to (marking it used), or why it is
    /// refused.
    pub fn token_owner(&self, token: &str) -> Result<u32, super::handlers::tokens::Refused> {
        super::handlers::tokens::lookup(&self.d, token)
    }

    /// Whether the token with SHA-256 `hash` is still live (a store that
    /// cannot say keeps it: a busy database does not end every stream).
    pub fn token_live(&self, hash: &str) -> bool {
        self.d.store().token_live(hash).unwrap_or(true)
    }
}

/// What a halted daemon answers.
fn halted(why: &str) -> ApiError {
    ApiError::new(
        ErrorKind::Unavailable,
        format!(
            "the daemon halted: {why}. Running tasks keep running; stop the daemon, then restore the database or run `nightjar daemon recover`"
        ),
    )
}
