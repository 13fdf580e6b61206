//! What `nightjar gc` removed.

use serde::{Deserialize, Serialize};

/// What one collection removed (or, dry, would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GcReport {
    /// Tasks deleted (sweep parents included).
    pub tasks: usize,
    /// Runs deleted; their folders go too.
    pub runs: Vec<i64>,
    /// Events deleted.
    pub events: usize,
    /// GPU series samples deleted.
    pub gpu_samples: usize,
    /// Plugin-cache files deleted.
    #[serde(default)]
    pub cache_files: usize,
    /// Runs whose local outputs and scratch were removed by their outcome's retention.
    #[serde(default)]
    pub outputs: usize,
    /// Bytes those held.
    #[serde(default)]
    pub outputs_bytes: u64,
    /// Dead letters (notifications given up on) older than the failed-task
    /// retention, deleted. Added in protocol 2; absent from older daemons.
    #[serde(default)]
    pub dead_letters: usize,
    /// Nothing was deleted: this is what would be.
    pub dry_run: bool,
}

impl GcReport {
    /// One line for a person: what was (or would be) deleted.
    pub fn summary(&self) -> String {
        format!(
            "{} {} tasks, {} runs and their folders, {} events, {} GPU samples, {} dead letters, {} unused compiled plugins; local outputs and scratch of {} runs ({})",
            if self.dry_run {
                "would delete"
            } else {
                "deleted"
            },
            self.tasks,
            self.runs.len(),
            self.events,
            self.gpu_samples,
            self.dead_letters,
            self.cache_files,
            self.outputs,
            bytesize::ByteSize::b(self.outputs_bytes)
                .display()
                .iec_short()
        )
    }
}
