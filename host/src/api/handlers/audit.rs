//! `audit`: the log of administrative actions. Administrators read all of
//! it; a user, what they did and what was done to their tasks (who
//! cancelled my task?).

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::{Audit, AuditRow};
use crate::daemon::Daemon;

impl Handler for Audit {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Vec<AuditRow>> {
        Ok(d.store().audit_log(
            self.since,
            self.limit.unwrap_or(1000),
            (!caller.admin).then_some((caller.uid, d.access.daemon_uid)),
        )?)
    }
}
