//! `runs`: the runs that ended since a moment, newest first. Open to every
//! caller, as `list` is (names, projects, owners and outcomes; no logs).

use std::sync::Arc;

use super::{Handler, blocking};
use crate::access::Caller;
use crate::api::Runs;
use crate::api::board::{FinishedRun, rows};
use crate::daemon::Daemon;

/// Runs listed when the request does not say.
pub const DEFAULT_ROWS: u32 = 200;

impl Handler for Runs {
    async fn handle(self, d: &Arc<Daemon>, _: &Caller) -> anyhow::Result<Vec<FinishedRun>> {
        let d = Arc::clone(d);
        blocking("run listing", move || {
            Ok(d.reader()
                .finished_runs(self.since, rows(self.limit, DEFAULT_ROWS))?)
        })
        .await
    }
}
