//! `/metrics`' reading: the store's gauges (on the reader's connection),
//! the GPUs as `gpus` shows them with their energy, and the counters the
//! daemon keeps, written as OpenMetrics text.

use anyhow::Result;

use crate::daemon::state::{Daemon, lock};
use crate::metrics::{GpuReading, Reading};

impl Daemon {
    /// The metrics as OpenMetrics text. Blocking: it reads the store.
    pub fn metrics_text(&self) -> Result<String> {
        let g = self.reader().gauges()?;
        let views = self.gpu_views();
        let energy: Vec<Option<f64>> = {
            let monitor = lock(&self.watch.gpu);
            views
                .iter()
                .map(|v| monitor.as_ref().and_then(|m| m.energy_j(v.index)))
                .collect()
        };
        let gpus = views
            .into_iter()
            .zip(energy)
            .map(|(v, energy_j)| GpuReading {
                index: v.index,
                uuid: v.uuid,
                name: v.name,
                util: v.util.map(|u| f64::from(u) / 100.0),
                mem_used: v.mem_used,
                mem_total: v.mem_total,
                temp_c: v.temp_c,
                power_w: v.power_w,
                energy_j,
            })
            .collect();
        let reading = Reading {
            tasks: g.tasks,
            gpus,
            outbox_pending: g.outbox_pending,
            outbox_dead: g.outbox_dead,
            archive_backlog: g.archive_backlog,
        };
        self.metrics
            .render(&reading)
            .map_err(|_| anyhow::anyhow!("cannot write the metrics' text"))
    }
}
