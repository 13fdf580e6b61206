//! `token-revoke ID`: one's own token (administrators: any).

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::{Changed, TokenRevoke};
use crate::daemon::Daemon;

impl Handler for TokenRevoke {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Changed> {
        super::tokens::revoke(d, caller, &self)
    }
}
