//! `rerun RUN`: queue a new task from a run's record, its inputs checked
//! (`rerun_diff.rs`), off the runtime's thread (it hashes inputs).

use std::sync::Arc;

use super::{Handler, blocking};
use crate::access::Caller;
use crate::api::{Rerun, Rerunning};
use crate::daemon::Daemon;

impl Handler for Rerun {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<Rerunning> {
        let (d, who) = (Arc::clone(d), caller.clone());
        blocking("rerun", move || super::rerun_diff::rerun(&d, &who, &self)).await
    }
}
