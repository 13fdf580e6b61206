//! `[archive]`: where succeeded runs' outputs, manifests and logs are
//! copied, verified and renamed into place (`archive::` does it), per
//! project if need be, and how failed tries are retried.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;

/// A project's own archive setting: a root, or `"off"`.
pub const OFF: &str = "off";

/// Settings of the archive.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArchiveConfig {
    /// The archive root (absolute; it must exist: nightjar never creates
    /// it, so an unmounted NAS is not silently replaced by a local folder).
    /// None: no archive, unless a project names one.
    pub root: Option<PathBuf>,
    /// Per project: its own root, or `"off"` for none.
    pub projects: BTreeMap<String, String>,
    /// Refuse a root that is not a mount point (the NAS is not mounted).
    pub require_mount: bool,
    /// The wait before the second try after a failure; doubled at each
    /// failure up to `retry_max`.
    #[serde(with = "humantime_serde_compat")]
    pub retry: Duration,
    /// The longest wait between tries.
    #[serde(with = "humantime_serde_compat")]
    pub retry_max: Duration,
}

impl Default for ArchiveConfig {
    fn default() -> Self {
        ArchiveConfig {
            root: None,
            projects: BTreeMap::new(),
            require_mount: false,
            retry: Duration::from_secs(60),
            retry_max: Duration::from_secs(6 * 3600),
        }
    }
}

impl ArchiveConfig {
    /// Checks the values, naming the key.
    pub fn validate(&self) -> Result<()> {
        let absolute = |key: &str, p: &Path| -> Result<()> {
            if !p.is_absolute() {
                bail!(
                    "key `{key}` is {:?}: an archive root must be an absolute path (the NAS mount point, e.g. \"/nas/archive\")",
                    p.display().to_string()
                );
            }
            Ok(())
        };
        if let Some(root) = &self.root {
            absolute("archive.root", root)?;
        }
        for (project, root) in &self.projects {
            if root != OFF {
                absolute(&format!("archive.projects.{project}"), Path::new(root))?;
            }
        }
        if self.retry < Duration::from_secs(1) || self.retry > self.retry_max {
            bail!(
                "keys `archive.retry` ({}) and `archive.retry_max` ({}): need 1s <= retry <= retry_max",
                humantime::format_duration(self.retry),
                humantime::format_duration(self.retry_max)
            );
        }
        Ok(())
    }

    /// The root project `project`'s runs are archived under, if any.
    pub fn root_for(&self, project: &str) -> Option<&Path> {
        match self.projects.get(project) {
            Some(r) if r == OFF => None,
            Some(r) => Some(Path::new(r)),
            None => self.root.as_deref(),
        }
    }

    /// The wait after the `failures`-th failed try (1 = the first).
    pub fn backoff(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(20);
        self.retry
            .saturating_mul(1u32 << doublings)
            .min(self.retry_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_may_have_its_own_root_or_none() {
        let cfg = ArchiveConfig {
            root: Some("/nas/archive".into()),
            projects: [
                ("vision".to_string(), "/nas/vision".to_string()),
                ("scratchpad".to_string(), OFF.to_string()),
            ]
            .into(),
            ..ArchiveConfig::default()
        };
        cfg.validate().unwrap();
        assert_eq!(cfg.root_for("vision"), Some(Path::new("/nas/vision")));
        assert_eq!(cfg.root_for("scratchpad"), None);
        assert_eq!(cfg.root_for("nlp"), Some(Path::new("/nas/archive")));
        assert_eq!(ArchiveConfig::default().root_for("nlp"), None);
    }

    #[test]
    fn relative_roots_and_a_retry_past_its_max_are_refused_by_key() {
        let rel = ArchiveConfig {
            projects: [("vision".to_string(), "nas/vision".to_string())].into(),
            ..ArchiveConfig::default()
        };
        let e = rel.validate().unwrap_err().to_string();
        assert!(
            e.contains("archive.projects.vision") && e.contains("absolute"),
            "{e}"
        );
        let retry = ArchiveConfig {
            retry: Duration::from_secs(7200),
            retry_max: Duration::from_secs(60),
            ..ArchiveConfig::default()
        };
        let e = retry.validate().unwrap_err().to_string();
        assert!(e.contains("archive.retry"), "{e}");
    }

    #[test]
    fn tries_back_off_by_doubling_up_to_the_max() {
        let cfg = ArchiveConfig::default();
        assert_eq!(cfg.backoff(1), Duration::from_secs(60));
        assert_eq!(cfg.backoff(2), Duration::from_secs(120));
        assert_eq!(cfg.backoff(50), Duration::from_secs(6 * 3600));
    }
}
