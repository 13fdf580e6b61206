//! `token-list`: the caller's API tokens (administrators: everyone's),
//! without their secrets.

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::{TokenList, TokenRow};
use crate::daemon::Daemon;

impl Handler for TokenList {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Vec<TokenRow>> {
        super::tokens::list(d, caller)
    }
}
