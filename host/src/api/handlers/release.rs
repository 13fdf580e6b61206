//! `release ID`: let held tasks start (the owner or an administrator; audited when it is
//! another user's task).

use std::sync::Arc;

use super::Handler;
use super::control::{Change, change};
use crate::access::Caller;
use crate::api::{Changed, Release};
use crate::daemon::Daemon;

impl Handler for Release {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Changed> {
        change(d, caller, self.id, Change::Release)
    }
}
