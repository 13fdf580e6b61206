//! `notify-retry ID`: queue a dead letter again (administrators).

use std::sync::Arc;

use super::{Handler, admin};
use crate::access::Caller;
use crate::api::{Changed, NotifyRetry};
use crate::daemon::Daemon;

impl Handler for NotifyRetry {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Changed> {
        admin(d, caller, "`notify retry`")?;
        let n = d.notify_retry(self.id)?;
        d.changed();
        Ok(Changed { tasks: n })
    }
}
