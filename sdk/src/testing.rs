//! Snapshot builders, so policies are unit-tested natively; run builders
//! and output folders, so validators are; and events and HTTP and mail stand-ins,
//! so notifiers are.
//!
//! A [`Snapshot`] borrows its text; the builders keep the text they are given
//! for the life of the test process (each distinct string once), so a built
//! snapshot is `Snapshot<'static>` and needs nothing kept alive beside it.

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::{Event, Gpu, Priority, QueuedTask, RunningTask, Severity, Snapshot, Usage};

pub(crate) mod http;
pub(crate) mod mail;
mod run;

pub use http::HttpMock;
pub use mail::MailMock;
pub use run::{NO_SHA256, OutputDir, RunBuilder};

/// An event as the host might send it: `id`, `kind`, key `<id>-test`, at
/// 2023-11-14 22:13:20 UTC plus `id` seconds, [`Severity::Info`] (`Error`
/// for a kind ending in `-failed`), task `id` and run `id`, project
/// `vision`, title `<kind> #<id>`, no text and no fields. Change what a
/// test needs with struct update syntax:
///
/// ```
/// use nightjar_sdk::Event;
/// use nightjar_sdk::testing::event;
///
/// let e = Event { project: Some("protein".into()), ..event(7, "task-failed") };
/// assert_eq!(e.key, "7-test");
/// ```
pub fn event(id: i64, kind: &str) -> Event {
    Event {
        id,
        key: format!("{id}-test"),
        kind: kind.to_string(),
        at: id.saturating_mul(1000).saturating_add(1_700_000_000_000),
        severity: if kind.ends_with("-failed") {
            Severity::Error
        } else {
            Severity::Info
        },
        task: Some(id),
        run: Some(id),
        project: Some("vision".to_string()),
        title: format!("{kind} #{id}"),
        text: String::new(),
        fields: Vec::new(),
    }
}

/// `text`, kept for the rest of the process: each distinct string is kept
/// once, however often it is asked for.
pub fn keep(text: &str) -> &'static str {
    static KEPT: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = kept.get(text) {
        return s;
    }
    let s: &'static str = Box::leak(text.into());
    kept.insert(s);
    s
}

/// Builds a [`Snapshot`] step by step.
pub struct SnapshotBuilder {
    snapshot: Snapshot<'static>,
}

impl SnapshotBuilder {
    /// An empty snapshot at `now` (Unix ms), UTC.
    pub fn at(now: i64) -> SnapshotBuilder {
        SnapshotBuilder {
            snapshot: Snapshot {
                now,
                time_zone: "UTC",
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

    /// Sets the daemon's zone name (`Asia/Shanghai`); keep the offset in step.
    pub fn time_zone(mut self, name: &str) -> Self {
        self.snapshot.time_zone = keep(name);
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
    pub fn queued_task(mut self, task: QueuedTask<'static>) -> Self {
        self.snapshot.queue.push(task);
        self
    }

    /// Adds a running task.
    pub fn running(mut self, id: i64, project: &str, gpus: Vec<u32>, started_at: i64) -> Self {
        self.snapshot.running.push(RunningTask {
            id,
            name: keep(&format!("task-{id}")),
            project: keep(project),
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
            uuid: keep(&format!("GPU-{index}")),
            name: "Test GPU",
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
            project: keep(project),
            gpus,
            started_at,
            ended_at,
        });
        self
    }

    /// The snapshot.
    pub fn build(self) -> Snapshot<'static> {
        self.snapshot
    }
}

/// A plain waiting task.
pub fn queued_task(
    id: i64,
    project: &str,
    priority: Priority,
    submitted_at: i64,
) -> QueuedTask<'static> {
    QueuedTask {
        id,
        name: keep(&format!("task-{id}")),
        project: keep(project),
        priority,
        gpus: 0,
        gpu_mem: None,
        submitted_at,
        eligible_at: submitted_at,
        attempts: 0,
        estimated_runtime: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_kept_once() {
        let a = keep(&String::from("vision"));
        let b = keep("vision");
        assert!(std::ptr::eq(a, b));
    }
}
