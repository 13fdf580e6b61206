//! `run-trace`: a period's finished runs as a trace for `nightjar
//! simulate`, read on a read-only connection of its own (as `report` is),
//! so a month of runs never holds the store's lock. Open to every caller,
//! as `report` is (names, projects, owners, times; no logs).

use nightjar_core::api::{ApiError, ErrorKind, RunTrace, TraceRows};

use crate::store::Store;

impl super::Handler for RunTrace {
    async fn handle(
        self,
        d: &std::sync::Arc<crate::daemon::Daemon>,
        _: &crate::access::Caller,
    ) -> anyhow::Result<TraceRows> {
        if self.from > self.to {
            return Err(ApiError::new(
                ErrorKind::Invalid,
                format!(
                    "the period starts after it ends (from {} > to {}): give --from before --to",
                    self.from, self.to
                ),
            )
            .into());
        }
        let db = d.cfg.db_path();
        super::blocking("run trace", move || {
            Ok(Store::open_read_only(&db)?.trace_rows(self.from, self.to)?)
        })
        .await
    }
}
