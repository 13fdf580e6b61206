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
        // Under SLURM: the nodes' GPUs as SLURM tells them, in place of the
        // totals the daemon places against.
        let me = Arc::clone(d);
        let nodes = tokio::task::spawn_blocking(move || me.node_gpu_views())
            .await
            .ok()
            .flatten();
        if let Some(nodes) = nodes {
            views = nodes;
        }
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
