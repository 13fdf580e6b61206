//! `checkpoint`: where a task saves its progress, and how a later attempt
//! resumes from it.
//!
//! ```toml
//! checkpoint = { pattern = "ckpt/*.pt", resume = "--resume-from ${CHECKPOINT}" }
//! ```
//!
//! When an attempt starts after an earlier run of the same task (a retry, or
//! a requeue after preemption), the newest *complete* file or folder that
//! `pattern` matches is handed to it: `resume` (with `${CHECKPOINT}`
//! replaced) is appended to the command, and `NIGHTJAR_CHECKPOINT` is set.
//! A checkpoint is complete once it has not been modified for `settle`, or,
//! when `marker` is set, once its marker exists (`{}.done`: the file
//! `X.done` marks `X` complete). On preemption the task gets `signal`, then
//! `grace` to save, then SIGKILL.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::humantime_serde_compat;

/// The default `settle`: a checkpoint untouched this long is complete.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(10);

/// What stands for the checkpoint's path in `marker`.
pub const MARKER_SLOT: &str = "{}";

/// The variable `resume` must use.
pub const CHECKPOINT_VAR: &str = "CHECKPOINT";

/// The signals a preempted task may be sent (all of them catchable), with their numbers.
pub const SIGNALS: &[(&str, i32)] = &[
    ("SIGTERM", libc::SIGTERM),
    ("SIGINT", libc::SIGINT),
    ("SIGHUP", libc::SIGHUP),
    ("SIGQUIT", libc::SIGQUIT),
    ("SIGUSR1", libc::SIGUSR1),
    ("SIGUSR2", libc::SIGUSR2),
    ("SIGALRM", libc::SIGALRM),
];

/// `checkpoint` as written in a task file: every value text, checked when
/// the task is resolved so that an error names the key and the remedy.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointDef {
    /// Glob of the checkpoint files or folders, relative to the workdir.
    pub pattern: String,
    /// Appended to the command on resume; must use `${CHECKPOINT}`.
    pub resume: Option<String>,
    /// How long a checkpoint must be left unmodified to count as complete.
    pub settle: Option<String>,
    /// The marker that says a checkpoint is complete (`{}.done`).
    pub marker: Option<String>,
    /// The signal a preempted run gets (default SIGTERM).
    pub signal: Option<String>,
    /// How long a preempted run gets to save before SIGKILL.
    pub grace: Option<String>,
}

/// `checkpoint` as the daemon stores it (checked; `${VARS}` still in place).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CheckpointSpec {
    /// Glob of the checkpoints; relative paths start at the workdir.
    pub pattern: String,
    /// Appended to the command when an attempt resumes (`${CHECKPOINT}` is
    /// the checkpoint's path); `None`: only `NIGHTJAR_CHECKPOINT` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// A checkpoint untouched this long is complete (when no `marker`).
    #[serde(with = "humantime_serde_compat", default = "default_settle")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub settle: Duration,
    /// A checkpoint is complete once this file exists (`{}` is its path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    /// The signal a preempted run gets, as `SIGUSR1`.
    #[serde(default = "default_signal")]
    pub signal: String,
    /// How long a preempted run gets to save; `None`: `sandbox.grace`.
    #[serde(
        with = "humantime_serde_compat::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub grace: Option<Duration>,
}

fn default_settle() -> Duration {
    DEFAULT_SETTLE
}

fn default_signal() -> String {
    "SIGTERM".into()
}

impl CheckpointSpec {
    /// The number of `signal` (it was checked at submit; SIGTERM otherwise).
    pub fn signal_number(&self) -> i32 {
        parse_signal(&self.signal).map_or(libc::SIGTERM, |(_, n)| n)
    }

    /// The marker path of the checkpoint at `path`, when a marker is set.
    pub fn marker_of(&self, path: &str) -> Option<String> {
        self.marker
            .as_deref()
            .map(|m| m.replacen(MARKER_SLOT, path, 1))
    }

    /// Checks the stored form (a raw API request is checked like a file):
    /// `output_set` says whether the task has an `output`.
    pub fn check(&self, output_set: bool) -> Result<(), String> {
        check_pattern(&self.pattern, output_set, &[])?;
        if let Some(r) = &self.resume {
            check_resume(r, &[])?;
        }
        if let Some(m) = &self.marker {
            check_marker(m)?;
        }
        parse_signal(&self.signal)?;
        Ok(())
    }
}

impl CheckpointDef {
    /// Checks what a user wrote and makes the stored form. `params` are the
    /// sweep parameters (substituted later, like the command's);
    /// `output_set` says whether the task has an `output`.
    pub fn resolve(&self, params: &[&str], output_set: bool) -> Result<CheckpointSpec, String> {
        check_pattern(&self.pattern, output_set, params)?;
        if let Some(r) = &self.resume {
            check_resume(r, params)?;
        }
        if let Some(m) = &self.marker {
            check_marker(m)?;
        }
        if self.marker.is_some() && self.settle.is_some() {
            return Err("checkpoint: `settle` and `marker` exclude each other: with a marker a checkpoint is complete once its marker exists; drop one of them".into());
        }
        let settle = match &self.settle {
            Some(s) => duration("settle", s)?,
            None => DEFAULT_SETTLE,
        };
        let grace = self
            .grace
            .as_deref()
            .map(|g| duration("grace", g))
            .transpose()?;
        let signal = match &self.signal {
            Some(s) => parse_signal(s)?.0.to_string(),
            None => default_signal(),
        };
        Ok(CheckpointSpec {
            pattern: self.pattern.clone(),
            resume: self.resume.clone(),
            settle,
            marker: self.marker.clone(),
            signal,
            grace,
        })
    }
}

/// `SIGUSR1`, `USR1`, `usr1`, `sigusr1` -> (`SIGUSR1`, its number).
pub fn parse_signal(s: &str) -> Result<(&'static str, i32), String> {
    let upper = s.trim().to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(n, _)| &n[3..] == name)
        .map(|(n, v)| (*n, *v))
        .ok_or_else(|| {
            let names: Vec<&str> = SIGNALS.iter().map(|(n, _)| *n).collect();
            format!(
                "checkpoint.signal `{}` is not a signal a task can catch to save: use one of {} (the `SIG` may be left out)",
                s.escape_debug(),
                names.join(", ")
            )
        })
}

fn duration(key: &str, s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim()).map_err(|e| {
        format!(
            "checkpoint.{key} `{}` is not a duration ({e}): write it like `30s`, `2m` or `1h`",
            s.escape_debug()
        )
    })
}

fn no_nul(key: &str, s: &str) -> Result<(), String> {
    if s.contains('\0') {
        return Err(format!("checkpoint.{key} contains a NUL byte"));
    }
    Ok(())
}

fn check_pattern(pattern: &str, output_set: bool, params: &[&str]) -> Result<(), String> {
    no_nul("pattern", pattern)?;
    if pattern.trim().is_empty() {
        return Err("checkpoint.pattern is empty: name the checkpoint files, relative to the workdir, as in `ckpt/*.pt`".into());
    }
    super::vars::check(pattern, params).map_err(|e| format!("checkpoint.pattern: {e}"))?;
    // The daemon matches one path component at a time (`**` alone is any depth).
    let plain = super::vars::expand(pattern, true, |_| {
        Some(super::vars::Subst::Value("x".into()))
    })
    .map_err(|e| format!("checkpoint.pattern: {e}"))?;
    for comp in plain.split('/').filter(|c| *c != "**") {
        globset::Glob::new(comp).map_err(|e| {
            format!(
                "checkpoint.pattern `{}` is not a valid glob ({e}): use `*`, `?`, `[abc]`, `{{a,b}}` within a name and `**` alone between slashes for any depth",
                pattern.escape_debug()
            )
        })?;
    }
    // Variables that differ between runs would point each attempt elsewhere.
    for var in ["RUN_ID", "SCRATCH"] {
        if pattern.contains(&format!("${{{var}}}")) {
            return Err(format!(
                "checkpoint.pattern uses `${{{var}}}`, which is new for every run, so a later attempt would never find the checkpoint: use a folder that stays, such as `${{WORKDIR}}/ckpt/*.pt` or `${{OUTPUT_PATH}}/*.pt` with `output` set"
            ));
        }
    }
    if !output_set && pattern.contains("${OUTPUT_PATH}") {
        return Err("checkpoint.pattern uses `${OUTPUT_PATH}` but the task sets no `output`: the default output folder is new for every run, so a later attempt would never find the checkpoint; set `output` (say `out/${TASK_ID}`) or use a folder under the workdir".into());
    }
    Ok(())
}

fn check_resume(resume: &str, params: &[&str]) -> Result<(), String> {
    no_nul("resume", resume)?;
    let needle = format!("${{{CHECKPOINT_VAR}}}");
    if !resume.contains(&needle) {
        return Err(format!(
            "checkpoint.resume `{}` does not use `{needle}`: write where the checkpoint goes, as in `--resume-from {needle}` (or leave `resume` out and read NIGHTJAR_CHECKPOINT)",
            resume.escape_debug()
        ));
    }
    let mut known: Vec<&str> = params.to_vec();
    known.push(CHECKPOINT_VAR);
    super::vars::check(resume, &known).map_err(|e| format!("checkpoint.resume: {e}"))
}

fn check_marker(marker: &str) -> Result<(), String> {
    no_nul("marker", marker)?;
    if !marker.starts_with(MARKER_SLOT) || marker == MARKER_SLOT {
        return Err(format!(
            "checkpoint.marker `{}` must start with `{{}}` (the checkpoint's path) and name another file: `{{}}.done` (a file beside it) or `{{}}/DONE` (a file inside a checkpoint folder)",
            marker.escape_debug()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(pattern: &str) -> CheckpointDef {
        CheckpointDef {
            pattern: pattern.into(),
            resume: Some("--resume-from ${CHECKPOINT}".into()),
            ..CheckpointDef::default()
        }
    }

    #[test]
    fn defaults_are_ten_seconds_and_sigterm() {
        let s = def("ckpt/*.pt").resolve(&[], false).unwrap();
        assert_eq!(s.settle, Duration::from_secs(10));
        assert_eq!(s.signal, "SIGTERM");
        assert_eq!(s.signal_number(), libc::SIGTERM);
        assert_eq!(s.grace, None);
        assert!(s.check(false).is_ok());
    }

    #[test]
    fn signals_are_accepted_with_or_without_sig() {
        for (s, n) in [
            ("SIGUSR1", libc::SIGUSR1),
            ("USR1", libc::SIGUSR1),
            ("int", libc::SIGINT),
        ] {
            assert_eq!(parse_signal(s).unwrap().1, n, "{s}");
        }
        let err = parse_signal("KILL").unwrap_err();
        assert!(err.contains("checkpoint.signal `KILL`"), "{err}");
        assert!(parse_signal("SIGNOPE").is_err());
    }

    #[test]
    fn bad_values_name_the_key_and_the_remedy() {
        let err = def(" ").resolve(&[], false).unwrap_err();
        assert!(err.contains("checkpoint.pattern is empty"), "{err}");
        let mut d = def("ckpt/*.pt");
        d.resume = Some("--resume".into());
        let err = d.resolve(&[], false).unwrap_err();
        assert!(
            err.contains("checkpoint.resume") && err.contains("${CHECKPOINT}"),
            "{err}"
        );
        let mut d = def("ckpt/*.pt");
        d.settle = Some("soon".into());
        let err = d.resolve(&[], false).unwrap_err();
        assert!(err.contains("checkpoint.settle `soon`"), "{err}");
        let mut d = def("ckpt/*.pt");
        d.grace = Some("1 fortnight".into());
        let err = d.resolve(&[], false).unwrap_err();
        assert!(err.contains("checkpoint.grace"), "{err}");
        let mut d = def("ckpt/*.pt");
        d.marker = Some("done".into());
        let err = d.resolve(&[], false).unwrap_err();
        assert!(err.contains("checkpoint.marker `done`"), "{err}");
        let mut d = def("ckpt/*.pt");
        d.marker = Some("{}.done".into());
        d.settle = Some("5s".into());
        assert!(d.resolve(&[], false).unwrap_err().contains("exclude"));
    }

    #[test]
    fn per_run_folders_are_refused_in_the_pattern() {
        let err = def("${SCRATCH}/*.pt").resolve(&[], true).unwrap_err();
        assert!(err.contains("${SCRATCH}"), "{err}");
        let err = def("${OUTPUT_PATH}/*.pt").resolve(&[], false).unwrap_err();
        assert!(err.contains("sets no `output`"), "{err}");
        assert!(def("${OUTPUT_PATH}/*.pt").resolve(&[], true).is_ok());
        let err = def("${NOPE}/*.pt").resolve(&[], true).unwrap_err();
        assert!(
            err.contains("checkpoint.pattern: unknown variable"),
            "{err}"
        );
        assert!(def("ck-${lr}/*.pt").resolve(&["lr"], false).is_ok());
        let err = def("ckpt/[a.pt").resolve(&[], false).unwrap_err();
        assert!(err.contains("not a valid glob"), "{err}");
        assert!(def("runs/**/step-*.pt").resolve(&[], false).is_ok());
    }

    #[test]
    fn the_marker_slot_is_the_checkpoint_path() {
        let mut d = def("ckpt/*");
        d.marker = Some("{}.done".into());
        let s = d.resolve(&[], false).unwrap();
        assert_eq!(s.marker_of("/w/ckpt/a.pt").unwrap(), "/w/ckpt/a.pt.done");
    }

    #[test]
    fn a_spec_stored_without_optional_keys_reads_with_defaults() {
        let s: CheckpointSpec = serde_json::from_str(r#"{"pattern":"ckpt/*.pt"}"#).unwrap();
        assert_eq!(s.settle, DEFAULT_SETTLE);
        assert_eq!(s.signal, "SIGTERM");
        let back: CheckpointSpec =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
