//! `notify-test NAME`: send a test message through one notifier
//! (administrators), off the runtime's thread (it waits for the delivery).

use std::sync::Arc;

use super::{Handler, admin, blocking};
use crate::access::Caller;
use crate::api::{NotifyTest, NotifyTestReply};
use crate::daemon::Daemon;

impl Handler for NotifyTest {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<NotifyTestReply> {
        admin(d, caller, "`notify test`")?;
        let d = Arc::clone(d);
        blocking("test", move || d.notify_test(&self.name)).await
    }
}
