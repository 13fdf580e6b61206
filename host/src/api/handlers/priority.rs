//! `priority ID LEVEL`: administrators only, always audited.

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::{Changed, Priority};
use crate::daemon::Daemon;

impl Handler for Priority {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Changed> {
        super::control::priority(d, caller, self.id, self.priority)
    }
}
