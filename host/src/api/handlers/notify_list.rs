//! `notify-list`: the notifiers and their dead letters (administrators).

use std::sync::Arc;

use super::{Handler, admin};
use crate::access::Caller;
use crate::api::{NotifyList, NotifyReport};
use crate::daemon::Daemon;

impl Handler for NotifyList {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<NotifyReport> {
        admin(d, caller, "reading the notifiers' dead letters")?;
        d.notify_report()
    }
}
