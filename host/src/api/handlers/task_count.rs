//! `task-count` (was `list-count`): how many tasks `ls` would list, by state (the footer of a
//! listing cut by its `limit`).

use std::sync::Arc;

use super::{Handler, blocking};
use crate::access::Caller;
use crate::api::{StateCount, TaskCount};
use crate::daemon::Daemon;

impl Handler for TaskCount {
    async fn handle(self, d: &Arc<Daemon>, _: &Caller) -> anyhow::Result<Vec<StateCount>> {
        let d = Arc::clone(d);
        blocking("listing count", move || {
            Ok(d.reader().list_count(&self.filter)?)
        })
        .await
    }
}
