//! `task-list` (was `list`; `nightjar ls`): the tasks a filter matches, off the runtime's
//! thread, so a long listing does not hold up the requests behind it.

use std::sync::Arc;

use super::{Handler, blocking};
use crate::access::Caller;
use crate::api::TaskList;
use crate::api::wire::TaskRow;
use crate::daemon::Daemon;

impl Handler for TaskList {
    async fn handle(self, d: &Arc<Daemon>, _: &Caller) -> anyhow::Result<Vec<TaskRow>> {
        let d = Arc::clone(d);
        blocking("listing", move || {
            let mut rows = d.reader().list(&self.filter, self.limit)?;
            rows.iter_mut().for_each(|t| d.live_reason(t));
            Ok(rows)
        })
        .await
    }
}
