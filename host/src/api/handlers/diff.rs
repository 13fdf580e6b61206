//! `diff A B`: two runs' start and output manifests (`rerun_diff.rs`).

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::{Diff, RunPair};
use crate::daemon::Daemon;

impl Handler for Diff {
    async fn handle(self, d: &Arc<Daemon>, caller: &Caller) -> anyhow::Result<RunPair> {
        super::rerun_diff::pair(d, caller, self.a, self.b)
    }
}
