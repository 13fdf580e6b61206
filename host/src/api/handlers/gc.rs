//! `gc`: delete ended tasks older than `[retention]` says (administrators;
//! audited). Removing outputs can take minutes: off the runtime's thread,
//! so the socket keeps answering meanwhile.

use std::sync::Arc;

use super::{Handler, admin, blocking};
use crate::access::Caller;
use crate::api::Gc;
use crate::api::wire::GcReport;
use crate::daemon::Daemon;

impl Handler for Gc {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<GcReport> {
        admin(d, caller, "`gc`")?;
        let (d, who) = (Arc::clone(d), caller.clone());
        blocking("collection", move || {
            let report = d.gc(self.dry_run)?;
            if !self.dry_run {
                super::control::audit(&d, &who, "gc", None, report.summary());
            }
            Ok(report)
        })
        .await
    }
}
