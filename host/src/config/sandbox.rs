//! `[sandbox]`: how each run is contained: the kill grace, the log cap,
//! the environment passed through, cgroups, and what is redacted.

use std::path::PathBuf;
use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use super::{DEFAULT_ENV_ALLOW, host, humantime_serde_compat};

/// Settings of the per-run sandbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// Time between SIGTERM and SIGKILL on timeout or cancel.
    #[serde(with = "humantime_serde_compat")]
    pub grace: Duration,
    /// Most bytes kept per stream (stdout, stderr) per run; the tail is kept.
    pub log_cap: ByteSize,
    /// Environment variables passed through from the daemon's environment.
    pub env_allow: Vec<String>,
    /// `auto`: a cgroup v2 per run where the machine allows; `off`: process groups only.
    pub cgroup: CgroupMode,
    /// The cgroup v2 folder under which per-run cgroups are made; empty means detect.
    pub cgroup_root: PathBuf,
    /// Env names (globs, any case) whose values `show`, `--json` and logs print as `<redacted>`.
    pub redact_env: Vec<String>,
}

/// Whether runs get their own cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupMode {
    /// Use a cgroup v2 per run when a writable hierarchy with `cgroup.kill` is found.
    Auto,
    /// Never use cgroups; process group and subreaper only.
    Off,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            grace: Duration::from_secs(30),
            log_cap: ByteSize::mib(64),
            env_allow: DEFAULT_ENV_ALLOW.iter().map(|s| s.to_string()).collect(),
            cgroup: CgroupMode::Auto,
            cgroup_root: PathBuf::new(),
            redact_env: host::default_redact_env(),
        }
    }
}
