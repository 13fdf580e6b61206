//! `gpu-list` (was `gpus`; `nightjar gpus`): every GPU's readings, reservations, health, and the tasks of
//! the runs on it.

use std::sync::Arc;

use super::Handler;
use crate::access::Caller;
use crate::api::GpuList;
use crate::api::views::GpuView;
use crate::daemon::Daemon;

impl Handler for GpuList {
    async fn handle(self, d: &Arc<Daemon>, _: &Caller) -> anyhow::Result<Vec<GpuView>> {
        let mut views = d.gpu_views();
        let store = d.store();
        for v in &mut views {
            v.tasks = v
                .runs
                .iter()
                .filter_map(|r| store.run(*r).ok().map(|r| r.task_id))
                .collect();
        }
        Ok(views)
    }
}
