//! `notify-digest`: write a digest now (administrators).

use std::sync::Arc;

use super::{Handler, admin};
use crate::access::Caller;
use crate::api::{DigestWritten, NotifyDigest};
use crate::daemon::Daemon;

impl Handler for NotifyDigest {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<DigestWritten> {
        admin(d, caller, "`notify digest`")?;
        let (from, to) = d.digest_now()?;
        Ok(DigestWritten { from, to })
    }
}
