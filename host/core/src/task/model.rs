//! The resolved form of a task, as stored in the database and sent over the API.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use crate::humantime_serde_compat;

pub use super::retry::RetryPolicy;

/// How urgent a task is. Higher runs first; `urgent` may bypass policy deferrals later.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Runs when nothing else waits.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Ahead of normal work.
    High,
    /// Ahead of everything.
    Urgent,
}

impl Priority {
    /// The rank stored in the database (higher first).
    pub fn rank(self) -> i64 {
        match self {
            Priority::Low => 0,
            Priority::Normal => 1,
            Priority::High => 2,
            Priority::Urgent => 3,
        }
    }

    /// The inverse of [`Priority::rank`].
    pub fn from_rank(r: i64) -> Priority {
        match r {
            i64::MIN..=0 => Priority::Low,
            1 => Priority::Normal,
            2 => Priority::High,
            _ => Priority::Urgent,
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Urgent => "urgent",
        }
    }
}

impl std::str::FromStr for Priority {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "low" => Ok(Priority::Low),
            "normal" => Ok(Priority::Normal),
            "high" => Ok(Priority::High),
            "urgent" => Ok(Priority::Urgent),
            _ => Err(format!(
                "`{s}` is not a priority: use low, normal, high or urgent"
            )),
        }
    }
}

/// What to execute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum CommandSpec {
    /// Run through `/bin/sh -c`.
    Shell(String),
    /// Run directly, no shell.
    Argv(Vec<String>),
}

impl CommandSpec {
    /// The argv the supervisor executes.
    pub fn to_argv(&self) -> Vec<String> {
        match self {
            CommandSpec::Shell(s) => vec!["/bin/sh".into(), "-c".into(), s.clone()],
            CommandSpec::Argv(v) => v.clone(),
        }
    }

    /// A one-line rendering for tables.
    pub fn display(&self) -> String {
        match self {
            CommandSpec::Shell(s) => s.clone(),
            CommandSpec::Argv(v) => v.join(" "),
        }
    }

    /// Applies `f` to every string in the command.
    pub fn map_strings<E>(&self, mut f: impl FnMut(&str) -> Result<String, E>) -> Result<Self, E> {
        Ok(match self {
            CommandSpec::Shell(s) => CommandSpec::Shell(f(s)?),
            CommandSpec::Argv(v) => {
                CommandSpec::Argv(v.iter().map(|s| f(s)).collect::<Result<_, _>>()?)
            }
        })
    }
}

/// What a task needs to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct Resources {
    /// Number of GPUs.
    pub gpus: u32,
    /// GPU memory per GPU (reserved at placement once GPU monitoring lands).
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub gpu_mem: Option<ByteSize>,
    /// Number of CPU cores the task is pinned to.
    pub cpus: Option<u32>,
    /// Memory limit, enforced through the cgroup where the memory controller is available.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub mem: Option<ByteSize>,
    /// Wall-clock limit; on expiry SIGTERM, grace, SIGKILL.
    #[serde(
        with = "humantime_serde_compat::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub timeout: Option<Duration>,
}

/// A task as the daemon stores it: every path absolute, sweep parameters
/// substituted; `${TASK_ID}`-style variables still in place until dispatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskSpec {
    /// Human name (unique names are not required).
    pub name: String,
    /// The project the task is accounted to.
    pub project: String,
    /// What to run.
    pub command: CommandSpec,
    /// Absolute working directory.
    pub workdir: PathBuf,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Absolute input paths.
    pub inputs: Vec<PathBuf>,
    /// Output folder template (absolute once substituted); `None` means the run folder's `output`.
    pub output: Option<String>,
    /// Scheduling priority.
    pub priority: Priority,
    /// What the task needs.
    pub resources: Resources,
    /// Retry settings.
    pub retry: RetryPolicy,
    /// Sweep parameters of this member (empty for plain tasks).
    pub params: BTreeMap<String, String>,
    /// A policy may stop it and queue it again (fair share).
    #[serde(default)]
    pub preemptible: bool,
    /// Where it saves checkpoints and how a later attempt resumes from them
    /// (absent in specs stored before nightjar 0.3).
    /// Boxed: most tasks have none, and the daemon keeps every waiting
    /// task's spec (128 bytes inline, 8 boxed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Box<super::checkpoint::CheckpointSpec>>,
    /// The result validators its runs are judged by (task file `[[validate]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validate: Vec<ValidatorRef>,
    /// Who the task belongs to and runs as. Set by the daemon from the
    /// submitter's socket credentials (whatever a client sends is replaced);
    /// absent from tasks stored before nightjar 0.5 (the daemon's user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// The file-mode creation mask the task runs with: the submitter's
    /// (the client sends its own; 0 to 0o777). Absent (older clients and
    /// specs): the daemon's umask at its start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub umask: Option<u32>,
    /// The seed each run gets as `NIGHTJAR_SEED`; absent, each run gets a
    /// generated one (below 2^32, which numpy's legacy seeding accepts),
    /// recorded with the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Opt in to the result cache: a run whose cache key (command, inputs'
    /// sha256, clean git commit, environment, settings) matches an earlier
    /// successful run of the same owner is completed from that run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache: bool,
    /// The venv, conda environment or container the command runs in
    /// (task file `[environment]`; absent in specs stored before it existed).
    /// Boxed, as `checkpoint` is (56 bytes inline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Box<super::environment::Environment>>,
}

/// The largest `seed` a task may name (stored as SQLite's signed integer).
pub const MAX_SEED: u64 = i64::MAX as u64;

/// The local user a task belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Owner {
    /// The user id, from the kernel (`SO_PEERCRED`).
    pub uid: u32,
    /// The user's name at submit time (for display; the uid decides).
    pub name: String,
}

/// A result validator a task's runs are judged by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ValidatorRef {
    /// A built-in validator's name (`outputs`) or the absolute path of a
    /// `.wasm` result validator.
    pub plugin: String,
    /// Its table (without `plugin`), as TOML text.
    #[serde(default)]
    pub config: String,
}

/// The kind of a dependency edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum DepKind {
    /// Start only after the dependency succeeded; its failure blocks this task.
    AfterOk,
    /// Start after the dependency ended, whatever the outcome.
    AfterAny,
}

impl DepKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            DepKind::AfterOk => "after-ok",
            DepKind::AfterAny => "after-any",
        }
    }
}

/// The target of a dependency in a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum DepTarget {
    /// A task already in the store (a sweep id means all its members).
    Existing(i64),
    /// Another entry of the same submission, by its index.
    Local(usize),
}

/// One entry of a submission: a plain task, a sweep or a recurring task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NewEntry {
    /// The entry's name (for sweeps and recurring tasks the group's name).
    pub name: String,
    /// The project.
    pub project: String,
    /// The members: one for a plain task, several for a sweep.
    pub members: Vec<TaskSpec>,
    /// Set for a sweep (the entry becomes a sweep: a parent with one task per member).
    pub is_sweep: bool,
    /// A recurring schedule (the entry becomes a template that creates a task per firing).
    pub schedule: Option<String>,
    /// Dependencies of every member.
    pub deps: Vec<(DepTarget, DepKind)>,
    /// Submit held (nothing starts until `release`).
    pub held: bool,
    /// Run for real even when the task opts in to the result cache (its
    /// success still feeds the cache): `submit --no-cache`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_cache: bool,
    /// A sweep's template and values (`task/grid.rs`): on the wire a
    /// sweep travels as this with `members` empty, and the daemon expands
    /// it (the same expansion the client ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<super::grid::Grid>,
}

impl NewEntry {
    /// The entry as it is sent: a sweep's members left out (its grid makes them).
    pub fn compact(mut self) -> NewEntry {
        if self.grid.is_some() {
            self.members.clear();
        }
        self
    }

    /// The entry as it was received: a sweep's members made from its grid
    /// (whatever members came with it).
    pub fn expand(mut self) -> Result<NewEntry, String> {
        if let Some(g) = &self.grid {
            self.members = g.members()?;
            self.is_sweep = true;
        }
        Ok(self)
    }
}
