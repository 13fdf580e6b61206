//! How a run ended: the class `ls`, `show`, `why`, `--json` and the retry
//! rules speak of.

use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum RunClass {
    /// Exit status 0.
    Ok,
    /// Non-zero exit, or the command could not be started.
    AppError,
    /// Killed at its timeout.
    Timeout,
    /// Killed because a user cancelled it.
    Cancelled,
    /// Killed by a signal nightjar did not send.
    Killed,
    /// Its supervisor vanished without a status (host reboot).
    Lost,
    /// Stopped by a policy's preemption request and queued again.
    Preempted,
    /// The GPU ran out of memory (its output said so, or exit code 101).
    GpuOom,
    /// The kernel's OOM killer ended a process of the run.
    HostOom,
    /// A file system was full (its output said so, or exit code 102).
    DiskFull,
    /// A network call failed (its output said so, or exit code 103).
    Network,
    /// It exited 0, but a validator found an error in its outputs.
    ValidationFailed,
}

/// The end of one run, as the supervisor (or adoption) reports it: what
/// `status.json` in the run folder holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunOutcome {
    /// The class the run falls in.
    pub class: RunClass,
    /// Exit code, when the process exited.
    pub exit_code: Option<i32>,
    /// Signal number, when the process was killed by one.
    pub signal: Option<i32>,
    /// When it ended (Unix ms).
    pub finished_at: i64,
    /// A human explanation (spawn error, timeout, ...).
    pub message: Option<String>,
}

impl RunClass {
    /// Every class, in the order `ls` and the docs list them.
    pub const ALL: [RunClass; 12] = [
        RunClass::Ok,
        RunClass::AppError,
        RunClass::ValidationFailed,
        RunClass::GpuOom,
        RunClass::HostOom,
        RunClass::DiskFull,
        RunClass::Network,
        RunClass::Timeout,
        RunClass::Killed,
        RunClass::Lost,
        RunClass::Preempted,
        RunClass::Cancelled,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunClass::Ok => "ok",
            RunClass::AppError => "app-error",
            RunClass::Timeout => "timeout",
            RunClass::Cancelled => "cancelled",
            RunClass::Killed => "killed",
            RunClass::Lost => "lost",
            RunClass::Preempted => "preempted",
            RunClass::GpuOom => "gpu-oom",
            RunClass::HostOom => "host-oom",
            RunClass::DiskFull => "disk-full",
            RunClass::Network => "network",
            RunClass::ValidationFailed => "validation-failed",
        }
    }

    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<RunClass> {
        Some(match s {
            "ok" => RunClass::Ok,
            "app-error" => RunClass::AppError,
            "timeout" => RunClass::Timeout,
            "cancelled" => RunClass::Cancelled,
            "killed" => RunClass::Killed,
            "lost" => RunClass::Lost,
            "preempted" => RunClass::Preempted,
            "gpu-oom" => RunClass::GpuOom,
            "host-oom" => RunClass::HostOom,
            "disk-full" => RunClass::DiskFull,
            "network" => RunClass::Network,
            "validation-failed" => RunClass::ValidationFailed,
            _ => return None,
        })
    }
}
