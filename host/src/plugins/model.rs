//! The host's own model of a scheduling pass: the snapshot every policy is
//! shown and the answer every policy gives, whatever version of the
//! contract it implements. Each version's adapter converts to and from it
//! (`v0_1`: to 0.1's records and back; `v0_2`: to the compact 0.2 snapshot
//! and back), so no generated binding leaks past its adapter.
//!
//! The shapes are 0.1's, which is what `plugins test` reads and prints as
//! JSON: field names in snake case, enum cases as written here (`"Normal"`,
//! `{"Allow": 5}`). That JSON form is documented and kept.

use serde::{Deserialize, Serialize};

/// Unix time in milliseconds (UTC).
pub type Timestamp = i64;
/// A duration in milliseconds.
pub type Millis = u64;
/// A task's id.
pub type TaskId = i64;

/// A task's priority class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Priority {
    /// `low`.
    Low,
    /// `normal`.
    Normal,
    /// `high`.
    High,
    /// `urgent`.
    Urgent,
}

/// What a task asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    /// GPUs.
    pub gpus: u32,
    /// GPU memory per GPU in bytes, when the task says.
    pub gpu_mem: Option<u64>,
    /// Cores it is pinned to, when it asks.
    pub cpus: Option<u32>,
    /// Memory limit in bytes, when it asks.
    pub mem: Option<u64>,
    /// Wall-clock limit.
    pub timeout: Option<Millis>,
}

/// A plugin's configuration could not be accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigError {
    /// The key at fault, when one is.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// A task waiting to start (dependencies met, backoff over).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedTask {
    /// Its id.
    pub id: TaskId,
    /// Its name (shared: a pass hands the same text on).
    pub name: std::sync::Arc<str>,
    /// Its project (shared).
    pub project: std::sync::Arc<str>,
    /// Its priority class.
    pub priority: Priority,
    /// What it asks for.
    pub resources: Resources,
    /// When it was submitted.
    pub submitted_at: Timestamp,
    /// When it became eligible to start.
    pub eligible_at: Timestamp,
    /// Runs so far.
    pub attempts: u32,
    /// Expected run time: its timeout if it has one.
    pub estimated_runtime: Option<Millis>,
}

/// A task that is running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningTask {
    /// Its id.
    pub id: TaskId,
    /// Its name (shared: a pass hands the same text on).
    pub name: std::sync::Arc<str>,
    /// Its project (shared).
    pub project: std::sync::Arc<str>,
    /// Its priority class.
    pub priority: Priority,
    /// The GPUs it holds.
    pub gpus: Vec<u32>,
    /// When it started.
    pub started_at: Timestamp,
    /// Whether a policy may ask to preempt it.
    pub preemptible: bool,
}

/// A GPU as the host last read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gpu {
    /// Its index.
    pub index: u32,
    /// Its uuid.
    pub uuid: String,
    /// Its model name.
    pub name: String,
    /// Memory, in bytes.
    pub mem_total: u64,
    /// Bytes used by all processes.
    pub mem_used: u64,
    /// Bytes reserved by nightjar's placements.
    pub mem_reserved: u64,
    /// Utilisation, in percent.
    pub util: u32,
    /// Temperature, in °C.
    pub temperature: u32,
    /// Power draw, in milliwatts.
    pub power: u32,
    /// False while the host cannot read it.
    pub healthy: bool,
    /// The policies that closed it in the previous pass (so a policy can
    /// keep state such as hysteresis while staying pure).
    pub closed_by: Vec<String>,
}

pub use super::usage_model::{Usage, UsageTable};

/// What every policy of a pass is shown. As JSON each usage row names its
/// project (`plugins test --snapshot`); in memory it is a position in
/// `projects`. Two snapshots are equal when every policy would see them
/// alike: usage rows by their projects' names, whatever the table's order.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(
    from = "super::usage_model::SnapshotJson",
    into = "super::usage_model::SnapshotJson"
)]
pub struct Snapshot {
    /// The pass's time.
    pub now: Timestamp,
    /// IANA name of the configured time zone.
    pub time_zone: String,
    /// Offset of that zone from UTC at `now`, in seconds.
    pub utc_offset: i32,
    /// Waiting tasks, in the host's order (priority, then submit time).
    pub queue: Vec<QueuedTask>,
    /// Tasks that run.
    pub running: Vec<RunningTask>,
    /// The GPUs.
    pub gpus: Vec<Gpu>,
    /// Runs that started in the host's usage window (default 7 days).
    /// Shared: a pass that changed no run hands on the last pass's list,
    /// and what a plugin was sent is kept without a copy.
    pub usage: std::sync::Arc<[Usage]>,
    /// The projects `usage` names, by position ([`UsageTable`] builds
    /// both). Shared, like the usage.
    pub projects: std::sync::Arc<[std::sync::Arc<str>]>,
}

impl Snapshot {
    /// The project of usage row `u` ("" for a position past the table,
    /// which no [`UsageTable`] writes).
    pub fn project(&self, u: &Usage) -> &str {
        self.projects.get(u.project as usize).map_or("", |p| p)
    }
}

/// A policy's answer for one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// It may start, with this score.
    Allow(i32),
    /// Not now.
    Defer(Deferral),
    /// Never: the task fails with this reason.
    Reject(std::sync::Arc<str>),
}

/// Why a task waits, and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deferral {
    /// Why (shared: one reason often answers a whole queue).
    pub reason: std::sync::Arc<str>,
    /// When to ask again (none: at the next pass).
    pub until: Option<Timestamp>,
}

/// A verdict on one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskVerdict {
    /// The task.
    pub task: TaskId,
    /// The verdict.
    pub verdict: Verdict,
}

/// A GPU no new work may start on in this pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosedGpu {
    /// Its index.
    pub index: u32,
    /// Why.
    pub reason: String,
}

/// A running task a policy asks to preempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preemption {
    /// The task.
    pub task: TaskId,
    /// Why.
    pub reason: String,
}

/// One policy's answer to a pass.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Evaluation {
    /// Verdicts, at most one per queued task.
    pub verdicts: Vec<TaskVerdict>,
    /// Scores by place in the pass's queue, as a column: each task that
    /// `verdicts` does not name is allowed with its score here. Empty, or
    /// as long as the queue with 0 at every place `verdicts` names (an
    /// answer that scores every task crosses as one column and is added
    /// as one, with no verdict record per task).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<i32>,
    /// GPUs closed to new work.
    pub closed_gpus: Vec<ClosedGpu>,
    /// Running tasks to preempt.
    pub preempt: Vec<Preemption>,
}

impl Evaluation {
    /// Every verdict of this answer on `queue` (the pass's snapshot queue),
    /// the score column read as allows: without one, `verdicts` as they
    /// are; with one, in queue order, each task's named verdicts (in their
    /// order) or else an allow with its score, then any verdict naming a
    /// task not in `queue`. Combining these is combining the answer.
    pub fn all_verdicts(&self, queue: &[QueuedTask]) -> Vec<TaskVerdict> {
        if self.scores.is_empty() {
            return self.verdicts.clone();
        }
        // Verdicts in queue order (as an answer is read): one merge.
        let mut out = Vec::with_capacity(queue.len().max(self.verdicts.len()));
        let mut k = 0;
        for (t, &score) in queue.iter().zip(&self.scores) {
            let from = k;
            while self.verdicts.get(k).is_some_and(|v| v.task == t.id) {
                k += 1;
            }
            if k > from {
                out.extend_from_slice(&self.verdicts[from..k]);
            } else {
                out.push(TaskVerdict {
                    task: t.id,
                    verdict: Verdict::Allow(score),
                });
            }
        }
        if k == self.verdicts.len() {
            return out;
        }
        out.clear();
        let mut named: std::collections::HashMap<TaskId, Vec<&TaskVerdict>> =
            std::collections::HashMap::new();
        for v in &self.verdicts {
            named.entry(v.task).or_default().push(v);
        }
        for (t, &score) in queue.iter().zip(&self.scores) {
            match named.remove(&t.id) {
                Some(vs) => out.extend(vs.into_iter().cloned()),
                None => out.push(TaskVerdict {
                    task: t.id,
                    verdict: Verdict::Allow(score),
                }),
            }
        }
        out.extend(
            (self.verdicts.iter())
                .filter(|v| named.contains_key(&v.task))
                .cloned(),
        );
        out
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
