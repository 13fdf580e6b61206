//! `ping`: is the daemon there? Answered even by a halted daemon.

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::{PROTOCOL, Ping, Pong};
use crate::daemon::Daemon;

impl Handler for Ping {
    async fn handle(self, _: &Arc<Daemon>, _: &Caller) -> anyhow::Result<Pong> {
        Ok(Pong {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").into(),
            protocol: PROTOCOL,
        })
    }
}
