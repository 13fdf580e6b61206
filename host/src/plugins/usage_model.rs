//! A run's use of the machine as a pass shows it (fair share's input): rows
//! whose project is a position in the snapshot's table of names, so a row
//! is a plain copy. A pass hands on up to a week of runs, and a count to
//! move on each row's shared name (an `Arc<str>` per row) was 8% of a
//! simulated pass, building the list and dropping it.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::model::{Gpu, QueuedTask, RunningTask, Snapshot, Timestamp};

/// A run's use of GPUs, for fair share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Its project: a position in the snapshot's `projects`.
    pub project: u32,
    /// GPUs the run held (0 for CPU-only runs).
    pub gpus: u32,
    /// When it started.
    pub started_at: Timestamp,
    /// When it ended (none while it runs).
    pub ended_at: Option<Timestamp>,
}

/// Builds usage rows and the table of the projects they name, each name
/// once, in the order first named.
#[derive(Debug, Default, Clone)]
pub struct UsageTable {
    names: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
    /// `names` as last handed out, until a name is added.
    shared: Option<Arc<[Arc<str>]>>,
}

impl UsageTable {
    /// The position of `project`, added when new.
    pub fn project(&mut self, project: &Arc<str>) -> u32 {
        if let Some(&k) = self.index.get(project) {
            return k;
        }
        let k = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(Arc::clone(project));
        self.index.insert(Arc::clone(project), k);
        self.shared = None;
        k
    }

    /// The row of a run of `project`.
    pub fn row(
        &mut self,
        project: &Arc<str>,
        gpus: u32,
        started_at: Timestamp,
        ended_at: Option<Timestamp>,
    ) -> Usage {
        Usage {
            project: self.project(project),
            gpus,
            started_at,
            ended_at,
        }
    }

    /// The names so far, by position: the same table as last time until a
    /// name is added (so snapshots that share it compare rows by position).
    pub fn names(&mut self) -> Arc<[Arc<str>]> {
        let names = &self.names;
        Arc::clone(
            self.shared
                .get_or_insert_with(|| names.iter().cloned().collect()),
        )
    }
}

impl PartialEq for Snapshot {
    fn eq(&self, o: &Snapshot) -> bool {
        let same = |a: &Usage, b: &Usage| {
            (a.gpus, a.started_at, a.ended_at) == (b.gpus, b.started_at, b.ended_at)
                && (Arc::ptr_eq(&self.projects, &o.projects) && a.project == b.project
                    || self.project(a) == o.project(b))
        };
        (self.now, &self.time_zone, self.utc_offset) == (o.now, &o.time_zone, o.utc_offset)
            && (&self.queue, &self.running, &self.gpus) == (&o.queue, &o.running, &o.gpus)
            && self.usage.len() == o.usage.len()
            && (self.usage.iter().zip(o.usage.iter())).all(|(a, b)| same(a, b))
    }
}

impl Eq for Snapshot {}

/// A usage row as JSON writes it: its project by name.
#[derive(Serialize, Deserialize)]
struct UsageJson {
    project: String,
    gpus: u32,
    started_at: Timestamp,
    ended_at: Option<Timestamp>,
}

/// [`Snapshot`] as JSON writes it (the documented form of `plugins test
/// --snapshot`): each usage row with its project's name.
#[derive(Serialize, Deserialize)]
pub(super) struct SnapshotJson {
    now: Timestamp,
    time_zone: String,
    utc_offset: i32,
    queue: Vec<QueuedTask>,
    running: Vec<RunningTask>,
    gpus: Vec<Gpu>,
    usage: Vec<UsageJson>,
}

impl From<SnapshotJson> for Snapshot {
    fn from(j: SnapshotJson) -> Snapshot {
        let mut table = UsageTable::default();
        let usage = (j.usage.iter())
            .map(|u| {
                table.row(
                    &Arc::from(u.project.as_str()),
                    u.gpus,
                    u.started_at,
                    u.ended_at,
                )
            })
            .collect();
        Snapshot {
            now: j.now,
            time_zone: j.time_zone,
            utc_offset: j.utc_offset,
            queue: j.queue,
            running: j.running,
            gpus: j.gpus,
            usage,
            projects: table.names(),
        }
    }
}

impl From<Snapshot> for SnapshotJson {
    fn from(s: Snapshot) -> SnapshotJson {
        let usage = (s.usage.iter())
            .map(|u| UsageJson {
                project: s.project(u).to_string(),
                gpus: u.gpus,
                started_at: u.started_at,
                ended_at: u.ended_at,
            })
            .collect();
        SnapshotJson {
            now: s.now,
            time_zone: s.time_zone,
            utc_offset: s.utc_offset,
            queue: s.queue,
            running: s.running,
            gpus: s.gpus,
            usage,
        }
    }
}
