//! A task's environment on the daemon's side: checked at submit (it
//! exists here, the runtime is installed, the image is present, no mount
//! reaches the state dir), activated in the run's variables (venv, conda),
//! and the command wrapped in its container runtime at dispatch.
//!
//! Activation sets what `activate` scripts set that needs no shell:
//! venv: `VIRTUAL_ENV`, `VIRTUAL_ENV_PROMPT`, `bin` first on `PATH`,
//! `PYTHONHOME` removed; conda: `CONDA_PREFIX`, `CONDA_DEFAULT_ENV`,
//! `CONDA_SHLVL=1`, `CONDA_PROMPT_MODIFIER`, `bin` first on `PATH`,
//! `PYTHONHOME` removed. Not done: a conda environment's
//! `etc/conda/activate.d` scripts (packages such as cudatoolkit or gdal
//! set variables there); the run's manifest names the scripts it skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::config::Config;
use crate::task::environment::{self, Environment, Runtime};

/// How long a submit may wait for `RUNTIME image exists/inspect`.
const RUNTIME_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Puts the venv's or conda environment's variables into `env` (a
/// container's are its image's: nothing to do here).
pub fn activate(env: &mut BTreeMap<String, String>, e: &Environment) {
    let (prefix, conda_name) = match e {
        Environment::Venv { path } => (path, None),
        Environment::Conda { name, prefix } => (
            prefix,
            Some(name.clone().unwrap_or_else(|| prefix.display().to_string())),
        ),
        Environment::Container(_) => return,
    };
    let bin = prefix.join("bin").display().to_string();
    let path = match env.get("PATH").filter(|p| !p.is_empty()) {
        Some(p) => format!("{bin}:{p}"),
        None => format!("{bin}:/usr/local/bin:/usr/bin:/bin"),
    };
    env.insert("PATH".into(), path);
    env.remove("PYTHONHOME");
    let shown = prefix
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match conda_name {
        None => {
            env.insert("VIRTUAL_ENV".into(), prefix.display().to_string());
            env.insert("VIRTUAL_ENV_PROMPT".into(), format!("({shown}) "));
            env.remove("CONDA_PREFIX");
        }
        Some(name) => {
            env.insert("CONDA_PREFIX".into(), prefix.display().to_string());
            env.insert("CONDA_DEFAULT_ENV".into(), name.clone());
            env.insert("CONDA_SHLVL".into(), "1".into());
            env.insert("CONDA_PROMPT_MODIFIER".into(), format!("({name}) "));
            env.remove("VIRTUAL_ENV");
        }
    }
}

/// The `etc/conda/activate.d` scripts of a conda environment, which are not
/// run (at most 20 named).
pub fn skipped_scripts(e: &Environment) -> Vec<String> {
    let Environment::Conda { prefix, .. } = e else {
        return Vec::new();
    };
    let Ok(rd) = crate::privsep::open::read_dir(&prefix.join("etc/conda/activate.d")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .flatten()
        .take(1000)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.truncate(20);
    names
}

/// Who a submit-time runtime call runs as: the task's owner when the
/// daemon is root and they are not (a rootless podman has its own images).
#[derive(Debug, Clone, Copy)]
pub struct As {
    /// User id.
    pub uid: u32,
    /// Primary group.
    pub gid: u32,
}

/// Checks `e` on this machine at submit and fills in the container runtime
/// from the config. Errors name the environment and say what to do.
pub fn check(cfg: &Config, e: &mut Environment, who: Option<As>) -> Result<(), String> {
    match e {
        Environment::Venv { path } => {
            let checked = environment::venv(path)?;
            if let Environment::Venv { path: real } = &checked
                && real != path
            {
                return Err(format!(
                    "environment.venv {} resolves to {}: submit the real folder",
                    path.display(),
                    real.display()
                ));
            }
            Ok(())
        }
        Environment::Conda { name, prefix } => {
            environment::conda_at(name.clone(), prefix).map(|_| ())
        }
        Environment::Container(c) => {
            let runtime = *c.runtime.get_or_insert(cfg.containers.runtime);
            for m in &c.mounts {
                check_mount(cfg, &m.host)?;
            }
            let program = find_program(runtime.as_str()).ok_or_else(|| {
                format!(
                    "environment.container: the runtime `{}` is not installed on the daemon's machine (not on its PATH); install it (Debian: `apt-get install {}`) or choose another runtime",
                    runtime.as_str(),
                    runtime.as_str()
                )
            })?;
            if runtime == Runtime::Apptainer {
                if !c.image.contains("://") && !Path::new(&c.image).is_file() {
                    return Err(format!(
                        "environment.container.image {}: no such image file on the daemon's machine",
                        c.image
                    ));
                }
                return Ok(());
            }
            let (global, _) = cfg.containers.args(runtime);
            let mut argv: Vec<String> = global.to_vec();
            argv.extend(["image", "inspect", "--format", "{{.Id}}", "--"].map(String::from));
            argv.push(c.image.clone());
            runtime_call(&program, &argv, who).map(|_| ()).map_err(|e| {
                format!(
                    "environment.container.image `{}` is not present in {}'s local images ({e}); pull or build it first (`{} pull {}`, `{} import`, `{} build`)",
                    c.image,
                    runtime.as_str(),
                    runtime.as_str(),
                    c.image,
                    runtime.as_str(),
                    runtime.as_str()
                )
            })
        }
    }
}

/// A mount may not reach the daemon's state dir (its database, other
/// users' runs): neither the folder, nor one inside it, nor one above it.
/// The host path must be its own real path (a raw client may send
/// `/x/../state` or a symlink, which the runtime would follow).
fn check_mount(cfg: &Config, host: &Path) -> Result<(), String> {
    let real = std::fs::canonicalize(host).map_err(|e| {
        format!(
            "environment.container.mounts: {}: {e}; create it or fix the mount",
            host.display()
        )
    })?;
    if real != host {
        return Err(format!(
            "environment.container.mounts: {} resolves to {}: submit the real folder",
            host.display(),
            real.display()
        ));
    }
    let real_or = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let state = real_or(&cfg.state_dir);
    let socket_dir = cfg.socket.parent().map(real_or);
    for guarded in std::iter::once(state).chain(socket_dir) {
        if host.starts_with(&guarded) || guarded.starts_with(host) {
            return Err(format!(
                "environment.container.mounts: {} would expose the daemon's state folder {} to the task: mount a folder outside it",
                host.display(),
                guarded.display()
            ));
        }
    }
    Ok(())
}

/// The image's id and digest as the runtime reports them, for the manifest.
pub fn image_id(
    cfg: &Config,
    c: &environment::Container,
    who: Option<As>,
) -> Result<String, String> {
    let runtime = c.runtime.unwrap_or(cfg.containers.runtime);
    if runtime == Runtime::Apptainer {
        return Ok(String::new());
    }
    let program = find_program(runtime.as_str())
        .ok_or_else(|| format!("{} is not installed", runtime.as_str()))?;
    let (global, _) = cfg.containers.args(runtime);
    let mut argv: Vec<String> = global.to_vec();
    let format = match runtime {
        Runtime::Podman => "{{.Id}} {{.Digest}}",
        _ => "{{.Id}} {{join .RepoDigests \",\"}}",
    };
    argv.extend(["image", "inspect", "--format", format, "--"].map(String::from));
    argv.push(c.image.clone());
    runtime_call(&program, &argv, who)
}

/// Runs the runtime under a deadline as `who`; its first output line, or
/// the first line of its error.
fn runtime_call(program: &Path, argv: &[String], who: Option<As>) -> Result<String, String> {
    let mut cmd = Command::new(program);
    cmd.args(argv).current_dir("/");
    if let Some(w) = who {
        let a = crate::users::by_uid(w.uid)
            .ok_or_else(|| format!("uid {} is not in the user database", w.uid))?;
        let r = crate::sandbox::files::RunAs {
            uid: a.uid,
            gid: a.gid,
            groups: crate::users::groups_of(&a),
            name: a.name.clone(),
            home: a.home.clone(),
        };
        cmd.env("HOME", &a.home).env("USER", &a.name);
        crate::sandbox::container::as_user(&mut cmd, &r)?;
    }
    let mut out = Vec::new();
    let ran = crate::sys::bounded::run(&mut cmd, Instant::now() + RUNTIME_TIMEOUT, |b| {
        if out.len() < 4096 {
            out.extend_from_slice(b)
        }
    })
    .map_err(|e| e.to_string())?;
    if ran.timed_out {
        return Err(format!(
            "it did not answer within {}s",
            RUNTIME_TIMEOUT.as_secs()
        ));
    }
    if !ran.ok() {
        return Err(ran.first_line().chars().take(300).collect());
    }
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string())
}

/// `name` on the daemon's `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
#[path = "environment_tests.rs"]
mod tests;

impl crate::daemon::Daemon {
    /// What a run's manifest records of its environment: the prefix, or
    /// the container's runtime, image, id and digest (asked of the runtime
    /// now, as the task's owner).
    pub(in crate::daemon) fn environment_record(
        &self,
        e: &Environment,
        spec: &crate::task::model::TaskSpec,
    ) -> nightjar_core::api::manifest::EnvironmentRecord {
        use nightjar_core::api::manifest::EnvironmentRecord;
        match e {
            Environment::Venv { path } => EnvironmentRecord {
                kind: "venv".into(),
                prefix: Some(path.clone()),
                ..Default::default()
            },
            Environment::Conda { name, prefix } => {
                // The owner's folder, listed as them.
                let skipped = crate::privsep::identity(spec.owner.as_ref())
                    .and_then(|who| crate::privsep::as_owner(who.as_ref(), |_| skipped_scripts(e)))
                    .unwrap_or_default();
                EnvironmentRecord {
                    kind: "conda".into(),
                    prefix: Some(prefix.clone()),
                    name: name.clone(),
                    notes: (!skipped.is_empty())
                        .then(|| {
                            format!(
                                "not run (nightjar activates without a shell): etc/conda/activate.d/{{{}}}",
                                skipped.join(",")
                            )
                        })
                        .into_iter()
                        .collect(),
                    ..Default::default()
                }
            }
            Environment::Container(c) => {
                let runtime = c.runtime.unwrap_or(self.cfg.containers.runtime);
                let mut r = EnvironmentRecord {
                    kind: "container".into(),
                    runtime: Some(runtime.as_str().into()),
                    image: Some(c.image.clone()),
                    ..Default::default()
                };
                match image_id(&self.cfg, c, owner_as(spec)) {
                    Ok(line) if runtime != Runtime::Apptainer => {
                        let mut words = line.split_whitespace();
                        r.image_id = words.next().map(String::from);
                        r.image_digest = words.next().filter(|d| !d.is_empty()).map(String::from);
                    }
                    Ok(_) => r
                        .notes
                        .push("apptainer: the image file's digest is not recorded".into()),
                    Err(e) => r.notes.push(format!("image id not read: {e}")),
                }
                r
            }
        }
    }
}

/// Whom runtime calls for `spec` run as: its owner when the daemon is root
/// and the owner is another user.
pub fn owner_as(spec: &crate::task::model::TaskSpec) -> Option<As> {
    let owner = spec.owner.as_ref().filter(|o| o.uid != 0)?;
    if crate::users::euid() != 0 || owner.uid == crate::users::euid() {
        return None;
    }
    let a = crate::users::by_uid(owner.uid)?;
    Some(As {
        uid: a.uid,
        gid: a.gid,
    })
}
