//! `whoami`: who the daemon takes the caller for.

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::{Identity, Whoami};
use crate::daemon::Daemon;

impl Handler for Whoami {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Identity> {
        Ok(Identity {
            uid: caller.uid,
            user: caller.name.clone(),
            admin: caller.admin,
            multi_user: d.access.multi_user(),
        })
    }
}
