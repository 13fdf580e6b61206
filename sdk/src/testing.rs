//! Snapshot builders, so policies are unit-tested natively.

use crate::{Gpu, Priority, QueuedTask, Resources, RunningTask, Snapshot, Usage};

/// Builds a [`Snapshot`] step by step.
pub struct SnapshotBuilder {
    snapshot: Snapshot,
}

impl SnapshotBuilder {
    /// An empty snapshot at `now` (Unix ms), UTC.
    pub fn at(now: i64) -> SnapshotBuilder {
        SnapshotBuilder {
            snapshot: Snapshot {
                now,
                time_zone: "UTC".into(),
                utc_offset: 0,
                queue: Vec::new(),
                running: Vec::new(),
                gpus: Vec::new(),
                usage: Vec::new(),
            },
        }
    }

    /// Sets the zone's offset from UTC, in seconds.
    pub fn utc_offset(mut self, seconds: i32) -> Self {
        self.snapshot.utc_offset = seconds;
        self
    }

    /// Adds a waiting task.
    pub fn queued(mut self, id: i64, project: &str, priority: Priority, submitted_at: i64) -> Self {
        self.snapshot
            .queue
            .push(queued_task(id, project, priority, submitted_at));
        self
    }

    /// Adds a waiting task built by hand.
    pub fn queued_task(mut self, task: QueuedTask) -> Self {
        self.snapshot.queue.push(task);
        self
    }

    /// Adds a running task.
    pub fn running(mut self, id: i64, project: &str, gpus: Vec<u32>, started_at: i64) -> Self {
        self.snapshot.running.push(RunningTask {
            id,
            name: format!("task-{id}"),
            project: project.into(),
            priority: Priority::Normal,
            gpus,
            started_at,
            preemptible: true,
        });
        self
    }

    /// Adds a GPU.
    pub fn gpu(mut self, index: u32, temperature: u32) -> Self {
        self.snapshot.gpus.push(Gpu {
            index,
            uuid: format!("GPU-{index}"),
            name: "Test GPU".into(),
            mem_total: 80 << 30,
            mem_used: 0,
            mem_reserved: 0,
            util: 0,
            temperature,
            power: 100_000,
            healthy: true,
            closed_by: Vec::new(),
        });
        self
    }

    /// Adds a usage record.
    pub fn usage(
        mut self,
        project: &str,
        gpus: u32,
        started_at: i64,
        ended_at: Option<i64>,
    ) -> Self {
        self.snapshot.usage.push(Usage {
            project: project.into(),
            gpus,
            started_at,
            ended_at,
        });
        self
    }

    /// The snapshot.
    pub fn build(self) -> Snapshot {
        self.snapshot
    }
}

/// A plain waiting task.
pub fn queued_task(id: i64, project: &str, priority: Priority, submitted_at: i64) -> QueuedTask {
    QueuedTask {
        id,
        name: format!("task-{id}"),
        project: project.into(),
        priority,
        resources: Resources {
            gpus: 0,
            gpu_mem: None,
            cpus: None,
            mem: None,
            timeout: None,
        },
        submitted_at,
        eligible_at: submitted_at,
        attempts: 0,
        estimated_runtime: None,
    }
}
