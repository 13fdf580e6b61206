//! Reproducibility manifests: what a task asked for at submit and what each
//! of its runs ran at start. The daemon captures them; `show --manifest`
//! prints them, `show --json` carries them, and each run folder keeps its
//! own as `manifest.json` (both captures), so a later `rerun` or `diff`
//! needs nothing else.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::task::model::TaskSpec;

/// The format name written into every manifest, raised when a field changes meaning.
pub const FORMAT: &str = "nightjar.manifest.v1";

/// The file name of a run's manifest in its run folder.
pub const FILE: &str = "manifest.json";

/// When a manifest was captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// At submit: what was asked.
    Submit,
    /// At a run's start: what ran.
    Start,
}

/// One capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    /// Submit or start.
    pub phase: Phase,
    /// When it was captured (Unix ms).
    pub captured_at: i64,
    /// How long capturing took (ms).
    pub capture_ms: u64,
    /// The task (absent in the copy stored before the task had an id).
    #[serde(default)]
    pub task: Option<i64>,
    /// The run (start only).
    #[serde(default)]
    pub run: Option<i64>,
    /// The attempt (start only).
    #[serde(default)]
    pub attempt: Option<i64>,
    /// The task spec after resolution, every default applied (env values
    /// of secret-looking names redacted).
    #[serde(default)]
    pub spec: Option<TaskSpec>,
    /// The command as executed: at start with every variable substituted
    /// and the checkpoint's resume argument appended.
    #[serde(default)]
    pub command: Vec<String>,
    /// The working directory.
    pub workdir: PathBuf,
    /// At submit the task's `env`; at start the whole environment the run
    /// got (allow-list, task env, `NIGHTJAR_*`, `CUDA_VISIBLE_DEVICES`).
    /// Values of names matching `sandbox.redact_env` read `<redacted>`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// What the daemon's config imposed on the run (start only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// The workdir's git repository.
    pub git: GitRecord,
    /// The task's inputs, in the order given.
    #[serde(default)]
    pub inputs: Vec<InputRecord>,
    /// Inputs whose content differs from the submit manifest's (start only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs_changed: Vec<InputChange>,
    /// The Python environment active in the task's env, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonEnv>,
    /// The task's `[environment]` as it ran (start only): the venv or
    /// conda prefix (packages under `python`), or the container's runtime,
    /// image and the image's id and digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<EnvironmentRecord>,
    /// Host name, kernel, nightjar version (start only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemInfo>,
    /// The GPUs the run was given, the driver and CUDA version (start only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<GpuRecord>,
    /// The policy chain in force, each plugin with its sha256 (start only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<PolicyRecord>,
    /// What the capture cost: files hashed now, bytes read, cache hits.
    #[serde(default)]
    pub stats: CaptureStats,
    /// What could not be captured, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The `NIGHTJAR_SEED` the run got (start only): the task's `seed`, or
    /// one generated for this run; `nightjar rerun` gives it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The run this task reruns (submit only, tasks made by `nightjar rerun`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<RerunOf>,
}

/// The environment a run ran in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EnvironmentRecord {
    /// `venv`, `conda` or `container`.
    pub kind: String,
    /// The venv's folder or the conda prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<PathBuf>,
    /// The conda environment's name, when asked for by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The container runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The image as named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The image's id (`sha256:...` of its config) as the runtime reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    /// The image's registry digest(s), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_digest: Option<String>,
    /// What was not done or could not be read (skipped activation scripts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Where a task made by `nightjar rerun` came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RerunOf {
    /// The task rerun.
    pub task: i64,
    /// The run whose start manifest the inputs were checked against.
    pub run: i64,
    /// Inputs that differ from that run's (submitted with `--allow-changed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs_changed: Vec<InputChange>,
}

/// The daemon settings that shaped a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Limits {
    /// GPU indices given.
    pub gpus: Vec<u32>,
    /// Cores pinned to.
    pub cpus: Vec<u32>,
    /// Wall-clock limit (ms).
    pub timeout_ms: Option<u64>,
    /// SIGTERM to SIGKILL (ms).
    pub grace_ms: u64,
    /// Bytes kept per log stream.
    pub log_cap: u64,
    /// Memory limit (bytes), when asked for.
    pub mem_limit: Option<u64>,
    /// The checkpoint the attempt resumed from.
    pub checkpoint: Option<PathBuf>,
}

/// The git state of the workdir's repository.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GitRecord {
    /// The repository's top folder (absent: not a repository, or git failed).
    pub repo: Option<PathBuf>,
    /// HEAD's commit (absent in a repository without commits).
    pub commit: Option<String>,
    /// The branch checked out (absent: detached HEAD).
    pub branch: Option<String>,
    /// The URL of `origin` (else the first remote), credentials removed.
    pub remote: Option<String>,
    /// Tracked files differ from HEAD (what `git diff HEAD` shows; untracked files do not count).
    pub dirty: Option<bool>,
    /// Tracked files that differ from HEAD.
    #[serde(default)]
    pub changed_files: Option<u64>,
    /// sha256 of `git diff HEAD --binary` when dirty.
    pub diff_sha256: Option<String>,
    /// Size of that diff in bytes.
    pub diff_bytes: Option<u64>,
    /// Why something is missing (not a repository, git timed out, ...).
    pub note: Option<String>,
}

/// One input file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InputRecord {
    /// Absolute path, as the task names it.
    pub path: PathBuf,
    /// `file`, `folder`, `fifo`, `char-device`, `block-device`, `socket`,
    /// `missing` or `unreadable`.
    pub kind: String,
    /// Size in bytes.
    pub size: Option<u64>,
    /// Modification time (Unix ns).
    pub mtime_ns: Option<i64>,
    /// sha256 of the content (regular files only).
    pub sha256: Option<String>,
    /// True when this capture read the file; false when the hash came
    /// from the cache or from the submit manifest (the file's device,
    /// inode, size, mtime and ctime unchanged).
    #[serde(default)]
    pub hashed_now: bool,
    /// Device number (identity for the cache).
    #[serde(default)]
    pub dev: Option<u64>,
    /// Inode number.
    #[serde(default)]
    pub ino: Option<u64>,
    /// Status-change time (Unix ns).
    #[serde(default)]
    pub ctime_ns: Option<i64>,
    /// Why there is no hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// An input that is not what it was at submit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InputChange {
    /// The input.
    pub path: PathBuf,
    /// Its hash at submit.
    pub before: Option<String>,
    /// Its hash now.
    pub after: Option<String>,
    /// What changed, in words (`content`, `missing now`, ...).
    pub what: String,
}

/// A Python environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PythonEnv {
    /// `venv` (VIRTUAL_ENV) or `conda` (CONDA_PREFIX).
    pub kind: String,
    /// The environment's folder.
    pub prefix: PathBuf,
    /// `pip freeze` lines, or `name=version=build` as `conda list --export` prints them.
    pub packages: Vec<String>,
    /// Where the list came from (`pip freeze`, `conda-meta`).
    pub source: String,
    /// Why the list is missing or short (timed out, failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SystemInfo {
    /// Host name.
    pub hostname: String,
    /// `uname`: system, release, version, machine.
    pub kernel: String,
    /// The nightjar release that ran it.
    pub nightjar: String,
}

/// The GPUs of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuRecord {
    /// Driver version (NVML).
    pub driver: Option<String>,
    /// The CUDA version the driver supports (`12.4`).
    pub cuda: Option<String>,
    /// The GPUs given to the run.
    pub devices: Vec<GpuDevice>,
}

/// One GPU of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuDevice {
    /// Index.
    pub index: u32,
    /// Model name (absent for a GPU nightjar does not monitor).
    pub name: Option<String>,
    /// UUID.
    pub uuid: Option<String>,
}

/// One member of the policy chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PolicyRecord {
    /// Name in the chain.
    pub name: String,
    /// Built in, or the file it was loaded from.
    pub source: String,
    /// sha256 of the component.
    pub sha256: Option<String>,
    /// Contract version.
    pub api_version: Option<String>,
}

/// What a capture cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CaptureStats {
    /// Input files read and hashed by this capture.
    pub hashed: u64,
    /// Bytes read to hash them.
    pub hashed_bytes: u64,
    /// Inputs whose hash came from the cache or the submit manifest (a stat only).
    pub cached: u64,
}

/// A task's manifests, as `show` carries them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Manifests {
    /// What was asked at submit (for a sweep member or a recurring
    /// instance, captured once for the whole submission).
    pub submit: Option<Manifest>,
    /// What each run ran, oldest first.
    pub runs: Vec<Manifest>,
}

impl Manifest {
    /// An empty capture of `phase` at `now` in `workdir`.
    pub fn new(phase: Phase, now: i64, workdir: PathBuf) -> Manifest {
        Manifest {
            format: FORMAT.to_string(),
            phase,
            captured_at: now,
            capture_ms: 0,
            task: None,
            run: None,
            attempt: None,
            spec: None,
            command: Vec::new(),
            workdir,
            env: BTreeMap::new(),
            limits: None,
            git: GitRecord::default(),
            inputs: Vec::new(),
            inputs_changed: Vec::new(),
            python: None,
            environment: None,
            system: None,
            gpus: None,
            policies: Vec::new(),
            stats: CaptureStats::default(),
            notes: Vec::new(),
            seed: None,
            rerun_of: None,
        }
    }
}
