//! `hold ID`: keep waiting tasks from starting (the owner or an administrator; audited when it is
//! another user's task).

use std::sync::Arc;

use super::Handler;
use super::control::{Change, change};
use crate::access::Caller;
use crate::api::{Changed, Hold};
use crate::daemon::Daemon;

impl Handler for Hold {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Changed> {
        change(d, caller, self.id, Change::Hold)
    }
}
