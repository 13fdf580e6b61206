//! `plugin-reload` (was `plugins-reload`): reload the chain's plugin files (administrators;
//! audited with what changed). The scheduler thread does it; this waits.

use std::sync::Arc;

use super::{Handler, admin};
use crate::access::Caller;
use crate::api::{PluginReload, ReloadChange};
use crate::daemon::Daemon;

impl Handler for PluginReload {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Vec<ReloadChange>> {
        admin(d, caller, "reloading plugins")?;
        let changes = d.reload_plugins().await?;
        let detail = changes.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        // The audit action keeps its first name (the verb was renamed, the
        // log's actions were not): older entries and newer read alike.
        super::control::audit(d, caller, "plugins-reload", None, detail.join("; "));
        Ok(changes)
    }
}
