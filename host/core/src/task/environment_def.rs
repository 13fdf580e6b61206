//! The `[environment]` table as a user writes it, and its resolution on the
//! submitting machine into a stored [`Environment`]: paths made absolute and
//! real, conda names looked up, the venv, prefix, image and mounts checked.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::environment::{
    Container, Environment, MAX_MOUNTS, Mount, Runtime, check_conda_name, check_image,
    check_mount_path, check_path,
};

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
