//! `queue`: a page of the waiting and running tasks with the counts of all
//! (LIMIT/OFFSET on the queue's index: a 10,000-task queue costs one page
//! of rows), each with its live waiting reason. Open to every caller, as
//! `list` is.

use std::sync::Arc;

use super::{Handler, blocking};
use crate::access::Caller;
use crate::api::Queue;
use crate::api::board::{QueuePage, rows};
use crate::daemon::Daemon;

/// Rows on a page when the request does not say.
pub const PER_PAGE: u32 = 100;

impl Handler for Queue {
    async fn handle(self, d: &Arc<Daemon>, _: &Caller) -> anyhow::Result<QueuePage> {
        let d = Arc::clone(d);
        blocking("queue page", move || {
            let mut page = d
                .reader()
                .queue_page(rows(self.limit, PER_PAGE), self.offset)?;
            page.rows.iter_mut().for_each(|t| d.live_reason(t));
            Ok(page)
        })
        .await
    }
}
