//! `plugin-list` (was `plugins`; `nightjar plugins ls`): the policy chain's members and their
//! states, as the scheduler thread last published them.

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::PluginList;
use crate::api::views::MemberView;
use crate::daemon::Daemon;

impl Handler for PluginList {
    async fn handle(self, d: &Arc<Daemon>, _: &Caller) -> anyhow::Result<Vec<MemberView>> {
        Ok(d.plugin_views())
    }
}
