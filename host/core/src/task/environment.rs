//! The environment a task's command runs in (task file `[environment]`,
//! `submit --venv/--conda/--container`): a Python virtual environment, a
//! conda environment, or a container image. Written by the user as an
//! [`EnvironmentDef`], resolved at submit into an [`Environment`] whose
//! paths are absolute and real (symlinks and `..` resolved by the kernel),
//! so what the daemon stores is the folder that will run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Longest image reference accepted, in bytes.
pub const MAX_IMAGE: usize = 512;
/// Most extra mounts of one container.
pub const MAX_MOUNTS: usize = 64;

/// The resolved environment, as stored with the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// The `[environment]` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentDef {
    /// A conda environment's name, or its prefix (a path: holds a `/`).
    pub conda: Option<String>,
    /// A virtual environment's folder (relative to the task file's folder).
    pub venv: Option<PathBuf>,
    /// A container: `{ image = "...", runtime = "podman", mounts = [...] }`.
    pub container: Option<ContainerDef>,
}

/// `container = { ... }` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerDef {
    /// The image.
    pub image: String,
    /// podman, docker or apptainer (default: the daemon's `[containers] runtime`).
    pub runtime: Option<Runtime>,
    /// `"HOST"`, `"HOST:TARGET"` or `"HOST:TARGET:ro"`; HOST relative to the task file's folder.
    #[serde(default)]
    pub mounts: Vec<String>,
}

impl EnvironmentDef {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.conda.is_none() && self.venv.is_none() && self.container.is_none()
    }
}

/// Resolves `def` (relative paths from `base`), checking on this machine
/// that the environment exists; conda names are looked up with
/// [`super::environment_find::conda_prefix`]. Errors name the key and say
/// what to do.
pub fn resolve(def: &EnvironmentDef, base: &Path) -> Result<Option<Environment>, String> {
    let given: Vec<&str> = [
        def.conda.as_ref().map(|_| "conda"),
        def.venv.as_ref().map(|_| "venv"),
        def.container.as_ref().map(|_| "container"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if given.len() > 1 {
        return Err(format!(
            "environment: {} are given; a task runs in exactly one environment, keep one",
            given.join(" and ")
        ));
    }
    if let Some(v) = &def.venv {
        return venv(&super::resolve::absolute(base, v)).map(Some);
    }
    if let Some(c) = &def.conda {
        if c.contains('/') {
            let prefix = super::resolve::absolute(base, Path::new(c));
            return conda_at(None, &prefix).map(Some);
        }
        check_conda_name(c)?;
        let prefix = super::environment_find::conda_prefix(c)?;
        return conda_at(Some(c.clone()), &prefix).map(Some);
    }
    if let Some(c) = &def.container {
        return container(c, base).map(Some);
    }
    Ok(None)
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

/// The real folder of `p` (symlinks and `..` resolved by the kernel).
fn real(what: &str, p: &Path, fix: &str) -> Result<PathBuf, String> {
    check_path(what, p)?;
    let r = std::fs::canonicalize(p).map_err(|e| {
        format!(
            "{what} {}: {e}; {fix}",
            p.display().to_string().escape_debug()
        )
    })?;
    check_path(what, &r)?;
    Ok(r)
}

/// A virtual environment at `p`: `pyvenv.cfg` and a `bin/python` that resolves.
pub fn venv(p: &Path) -> Result<Environment, String> {
    let fix = "make it with `python3 -m venv PATH` or fix `environment.venv`";
    let path = real("environment.venv", p, fix)?;
    if !path.join("pyvenv.cfg").is_file() {
        return Err(format!(
            "environment.venv {} is not a virtual environment (no pyvenv.cfg in it); {fix}",
            path.display()
        ));
    }
    let python = path.join("bin/python");
    if !python.is_file() {
        return Err(format!(
            "environment.venv {}: {} is missing or a broken link (was the Python it was made with removed?); recreate it with `python3 -m venv --clear {}`",
            path.display(),
            python.display(),
            path.display()
        ));
    }
    Ok(Environment::Venv { path })
}

/// A conda environment at `prefix`: a folder with `conda-meta/`.
pub fn conda_at(name: Option<String>, prefix: &Path) -> Result<Environment, String> {
    let fix = "create it (`conda create -p PREFIX`) or fix `environment.conda`";
    let prefix = real("environment.conda", prefix, fix)?;
    if !prefix.join("conda-meta").is_dir() {
        return Err(format!(
            "environment.conda {} is not a conda environment (no conda-meta/ folder in it); {fix}",
            prefix.display()
        ));
    }
    Ok(Environment::Conda { name, prefix })
}

fn check_conda_name(n: &str) -> Result<(), String> {
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

fn container(def: &ContainerDef, base: &Path) -> Result<Environment, String> {
    check_image(&def.image)?;
    let image = match def.runtime {
        // An apptainer image is a file (made absolute) or a URI.
        Some(Runtime::Apptainer) if !def.image.contains("://") => {
            let p = super::resolve::absolute(base, Path::new(&def.image));
            if !p.is_file() {
                return Err(format!(
                    "environment.container.image {}: no such image file; build it (`apptainer build`) or fix the path",
                    p.display()
                ));
            }
            p.display().to_string()
        }
        _ => def.image.clone(),
    };
    if def.mounts.len() > MAX_MOUNTS {
        return Err(format!(
            "environment.container.mounts lists {} mounts (at most {MAX_MOUNTS})",
            def.mounts.len()
        ));
    }
    let mut mounts = Vec::with_capacity(def.mounts.len());
    for m in &def.mounts {
        mounts.push(mount(m, base)?);
    }
    Ok(Environment::Container(Container {
        image,
        runtime: def.runtime,
        mounts,
    }))
}

/// Parses `HOST[:TARGET][:ro|rw]`; the host path is resolved to its real
/// folder, which must exist and may not be `/`.
pub fn mount(text: &str, base: &Path) -> Result<Mount, String> {
    let shown = text.escape_debug().to_string();
    let mut parts: Vec<&str> = text.split(':').collect();
    let read_only = match parts.last() {
        Some(&"ro") if parts.len() > 1 => {
            parts.pop();
            true
        }
        Some(&"rw") if parts.len() > 1 => {
            parts.pop();
            false
        }
        _ => false,
    };
    let (host, target) = match parts.as_slice() {
        [h] => (*h, None),
        [h, t] => (*h, Some(*t)),
        _ => {
            return Err(format!(
                "environment.container.mounts: `{shown}` is not HOST, HOST:TARGET or HOST:TARGET:ro"
            ));
        }
    };
    if host.is_empty() {
        return Err(format!(
            "environment.container.mounts: `{shown}` names no host path"
        ));
    }
    let what = "environment.container.mounts";
    let host = real(
        what,
        &super::resolve::absolute(base, Path::new(host)),
        "create it or fix the mount",
    )?;
    check_mount_path(what, &host)?;
    if host == Path::new("/") {
        return Err(format!(
            "{what}: `{shown}` mounts the host's whole file system (`/`): mount the folders the task needs"
        ));
    }
    let target = match target {
        Some(t) => {
            let t = PathBuf::from(t);
            check_mount_path(what, &t)?;
            if t.components().any(|c| c == std::path::Component::ParentDir) || t == Path::new("/") {
                return Err(format!(
                    "{what}: target `{}` must be an absolute folder other than `/`, without `..`",
                    t.display()
                ));
            }
            t
        }
        None => host.clone(),
    };
    Ok(Mount {
        host,
        target,
        read_only,
    })
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
