//! `why ID`: why a task waits, or where and why it started.

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::Why;
use crate::api::why::WhyReport;
use crate::daemon::Daemon;

impl Handler for Why {
    async fn handle(self, d: &Arc<Daemon>, _: &Caller) -> anyhow::Result<WhyReport> {
        d.why(self.id)
    }
}
