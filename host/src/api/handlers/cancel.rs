//! `cancel ID`: a task, sweep or recurring template (its owner or an
//! administrator; audited when it is another user's).

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::{Cancel, Cancelled};
use crate::daemon::Daemon;

impl Handler for Cancel {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Cancelled> {
        super::control::cancel(d, caller, self.id)
    }
}
