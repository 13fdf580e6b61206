//! `retry ID`: queue failed, cancelled or blocked tasks again (the owner,
//! counted against their `queued` quota, or an administrator).

use std::sync::Arc;

use super::Handler;
use super::control::{Change, change};
use crate::access::Caller;
use crate::api::{Changed, Retry};
use crate::daemon::Daemon;

impl Handler for Retry {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Changed> {
        let no_cache = self.no_cache;
        change(d, caller, self.id, Change::Retry { no_cache })
    }
}
