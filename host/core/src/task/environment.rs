//! The environment a task's command runs in (task file `[environment]`,
//! `submit --venv/--conda/--container`): a Python virtual environment, a
//! conda environment, or a container image. Written by the user as an
//! [`EnvironmentDef`], resolved at submit (`environment_def.rs`) into an
//! [`Environment`] whose paths are absolute and real (symlinks and `..`
//! resolved by the kernel), so what the daemon stores is the folder that
//! will run. This module holds the stored form and the checks any client's
//! submission passes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use super::environment_def::{ContainerDef, EnvironmentDef, conda_at, mount, resolve, venv};

/// Longest image reference accepted, in bytes.
pub const MAX_IMAGE: usize = 512;
/// Most extra mounts of one container.
pub const MAX_MOUNTS: usize = 64;

/// The resolved environment, as stored with the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    /// A Python virtual environment (its folder holds `pyvenv.cfg` and `bin/python`).
    Venv {
        /// The venv's folder, absolute and without symlinks.
        path: PathBuf,
    },
    /// A conda (or mamba/micromamba) environment.
    Conda {
        /// The name it was asked for by, when given by name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Its prefix (a folder holding `conda-meta/`), absolute.
        prefix: PathBuf,
    },
    /// A container image run by a container runtime.
    Container(Container),
}

/// A container a task runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Container {
    /// The image reference (podman/docker), or an image file or URI (apptainer).
    pub image: String,
    /// The runtime; `None` until the daemon fills in its `[containers] runtime`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    /// Extra bind mounts (the workdir and output folder are always mounted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
}

/// A container runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// `podman run` (rootful or rootless: it runs as the task's owner).
    Podman,
    /// `docker run` through the Docker daemon.
    Docker,
    /// `apptainer exec` (Singularity's successor).
    Apptainer,
}

impl Runtime {
    /// The lowercase name, also the program run.
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Podman => "podman",
            Runtime::Docker => "docker",
            Runtime::Apptainer => "apptainer",
        }
    }
}

impl std::str::FromStr for Runtime {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "podman" => Ok(Runtime::Podman),
            "docker" => Ok(Runtime::Docker),
            "apptainer" => Ok(Runtime::Apptainer),
            _ => Err(format!(
                "`{}` is not a container runtime: use podman, docker or apptainer",
                s.escape_debug()
            )),
        }
    }
}

/// One bind mount: a host folder or file seen at `target` in the container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Mount {
    /// The host path, absolute and without symlinks.
    pub host: PathBuf,
    /// Where the container sees it (absolute).
    pub target: PathBuf,
    /// Mounted read-only.
    #[serde(default)]
    pub read_only: bool,
}

impl Environment {
    /// One line for `show`: `venv /srv/venv`, `conda torch (/opt/conda/envs/torch)`,
    /// `container podman localhost/img:1 (+2 mounts)`.
    pub fn describe(&self) -> String {
        match self {
            Environment::Venv { path } => format!("venv {}", path.display()),
            Environment::Conda {
                name: Some(n),
                prefix,
            } => format!("conda {n} ({})", prefix.display()),
            Environment::Conda { name: None, prefix } => format!("conda {}", prefix.display()),
            Environment::Container(c) => {
                let mut s = format!(
                    "container {} {}",
                    c.runtime.map_or("(daemon's runtime)", Runtime::as_str),
                    c.image
                );
                if !c.mounts.is_empty() {
                    s.push_str(&format!(" (+{} mounts)", c.mounts.len()));
                }
                s
            }
        }
    }
}

/// Refuses a path no environment may live at: NUL, a newline (it would
/// split `PATH` lines and logs), not absolute.
pub fn check_path(what: &str, p: &Path) -> Result<(), String> {
    let s = p.as_os_str().as_encoded_bytes();
    if s.contains(&0) || s.contains(&b'\n') || s.contains(&b'\r') {
        return Err(format!(
            "{what} `{}` holds a NUL byte or a line break: rename the folder",
            p.display().to_string().escape_debug()
        ));
    }
    if !p.is_absolute() {
        return Err(format!(
            "{what} `{}` is not an absolute path",
            p.display().to_string().escape_debug()
        ));
    }
    Ok(())
}

pub(crate) fn check_conda_name(n: &str) -> Result<(), String> {
    let ok = !n.is_empty()
        && n.len() <= 255
        && !n.starts_with('-')
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'));
    if ok && n != "." && n != ".." {
        Ok(())
    } else {
        Err(format!(
            "environment.conda `{}` is not an environment name (letters, digits, `-_.+`); give a prefix path (with a `/`) instead",
            n.escape_debug()
        ))
    }
}

/// Checks an image reference: not empty, at most [`MAX_IMAGE`] bytes, no
/// leading `-` (it would read as a runtime flag), no spaces or control
/// characters.
pub fn check_image(image: &str) -> Result<(), String> {
    let shown = image.escape_debug().to_string();
    if image.is_empty() {
        return Err("environment.container.image is empty".into());
    }
    if image.len() > MAX_IMAGE {
        return Err(format!(
            "environment.container.image is {} bytes long (at most {MAX_IMAGE})",
            image.len()
        ));
    }
    if image.starts_with('-') {
        return Err(format!(
            "environment.container.image `{shown}` starts with `-`: an image name never does (it would read as a runtime flag)"
        ));
    }
    if let Some(bad) = image
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, ',' | '\'' | '"' | '\\'))
    {
        return Err(format!(
            "environment.container.image `{shown}` contains `{}`: not an image reference",
            bad.escape_debug()
        ));
    }
    Ok(())
}

/// Checks a path mounted into a container: absolute, and free of what the
/// runtimes' mount syntax splits on (`,` `:`) or cannot carry (line breaks, NUL).
pub fn check_mount_path(what: &str, p: &Path) -> Result<(), String> {
    check_path(what, p)?;
    let s = p.to_string_lossy();
    if let Some(bad) = s.chars().find(|c| matches!(c, ',' | ':') || c.is_control()) {
        return Err(format!(
            "{what} `{}` contains `{}`, which container runtimes' mount options cannot carry: rename the folder",
            s.escape_debug(),
            bad.escape_debug()
        ));
    }
    Ok(())
}

/// Checks a stored (resolved) environment as it arrives from any client:
/// absolute paths without line breaks, an image that cannot read as a
/// flag, mounts the runtimes can carry. What exists on the machine is
/// checked by the daemon.
pub fn check_stored(e: &Environment) -> Result<(), String> {
    match e {
        Environment::Venv { path } => check_path("environment.venv", path),
        Environment::Conda { name, prefix } => {
            if let Some(n) = name {
                check_conda_name(n)?;
            }
            check_path("environment.conda", prefix)
        }
        Environment::Container(c) => {
            check_image(&c.image)?;
            if c.mounts.len() > MAX_MOUNTS {
                return Err(format!(
                    "environment.container.mounts lists {} mounts (at most {MAX_MOUNTS})",
                    c.mounts.len()
                ));
            }
            for m in &c.mounts {
                check_mount_path("environment.container.mounts", &m.host)?;
                check_mount_path("environment.container.mounts", &m.target)?;
                if m.host == Path::new("/") || m.target == Path::new("/") {
                    return Err(
                        "environment.container.mounts: `/` cannot be mounted or mounted over"
                            .into(),
                    );
                }
                if m.target
                    .components()
                    .any(|c| c == std::path::Component::ParentDir)
                {
                    return Err(format!(
                        "environment.container.mounts: target {} holds `..`",
                        m.target.display()
                    ));
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
#[path = "environment_tests.rs"]
mod tests;
