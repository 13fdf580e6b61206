//! Running a task's command inside a container: the runtime's command line
//! (built here, so it is unit-tested without any runtime), and the
//! supervisor's hold on the container it started (signals through the
//! runtime, removal when the run is over).
//!
//! What each runtime gets:
//! - podman: `podman GLOBAL run --rm --name NAME -w WORKDIR --mount
//!   type=bind,... (workdir, output, mounts) [--device nvidia.com/gpu=N ...]
//!   --env KEY ... RUN_ARGS -- IMAGE ARGV`. GPUs by CDI, one device per GPU
//!   given; inside, `CUDA_VISIBLE_DEVICES` counts from 0 (or keeps UUIDs).
//! - docker: the same with `--gpus "device=N,M"` (the NVIDIA container
//!   toolkit) and `--user UID:GID` (the daemon runs containers as root otherwise).
//! - apptainer: `apptainer GLOBAL exec --pwd WORKDIR --bind ... [--nv]
//!   RUN_ARGS IMAGE ARGV`; the environment passes as apptainer passes it,
//!   and `--nv` binds every GPU, so `CUDA_VISIBLE_DEVICES` keeps the host's numbers.
//!
//! Values never travel on the command line: `--env KEY` takes each value
//! from the runtime's own environment (the run's), so a secret is not in
//! `ps` output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::task::environment::{Container, Runtime};

/// Variables not passed into a container: the image's own `PATH`, `HOME`,
/// `TMPDIR` and `SHELL` hold there (the host's may not exist inside).
const NOT_PASSED: &[&str] = &["PATH", "HOME", "TMPDIR", "SHELL"];

/// How long one runtime call of the supervisor (kill, rm) may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// What the command line is built from.
pub struct Wrap<'a> {
    /// The container.
    pub container: &'a Container,
    /// Its runtime (the task's, else the config's).
    pub runtime: Runtime,
    /// The runtime's global flags and its `run` flags (`[containers]`).
    pub args: (&'a [String], &'a [String]),
    /// The container's name (podman, docker).
    pub name: &'a str,
    /// The task's workdir (mounted at the same path, and the container's).
    pub workdir: &'a Path,
    /// The output folder (mounted at the same path), if any.
    pub output: Option<&'a Path>,
    /// The GPUs the run was given, as `CUDA_VISIBLE_DEVICES` names them on the host.
    pub gpus: &'a [String],
    /// Whether `gpus` are UUIDs (they then stay the same inside).
    pub by_uuid: bool,
    /// The user the container's process should be (docker only).
    pub user: (u32, u32),
    /// The run's environment (its keys are passed in).
    pub env: &'a BTreeMap<String, String>,
    /// The task's command.
    pub argv: &'a [String],
}

/// The runtime's command line, and the variables to set for the runtime
/// itself (those it passes in by name).
pub fn command(w: &Wrap<'_>) -> Result<(Vec<String>, BTreeMap<String, String>), String> {
    use crate::task::environment::{check_image, check_mount_path};
    check_image(&w.container.image)?;
    let mut binds: Vec<(PathBuf, PathBuf, bool)> =
        vec![(w.workdir.to_path_buf(), w.workdir.to_path_buf(), false)];
    if let Some(o) = w.output {
        binds.push((o.to_path_buf(), o.to_path_buf(), false));
    }
    binds.extend(
        w.container
            .mounts
            .iter()
            .map(|m| (m.host.clone(), m.target.clone(), m.read_only)),
    );
    for (h, t, _) in &binds {
        check_mount_path("container mount", h)?;
        check_mount_path("container mount", t)?;
    }
    let (global, run_args) = w.args;
    let mut argv = vec![w.runtime.as_str().to_string()];
    argv.extend(global.iter().cloned());
    let mut env = w.env.clone();
    // Inside, the devices given are the only ones: counted from 0 (a UUID stays itself).
    let inside: Vec<String> = if w.by_uuid {
        w.gpus.to_vec()
    } else {
        (0..w.gpus.len()).map(|i| i.to_string()).collect()
    };
    match w.runtime {
        Runtime::Podman | Runtime::Docker => {
            argv.extend(["run", "--rm", "--name", w.name, "-w"].map(String::from));
            argv.push(w.workdir.display().to_string());
            for (h, t, ro) in &binds {
                argv.push("--mount".into());
                argv.push(format!(
                    "type=bind,source={},target={}{}",
                    h.display(),
                    t.display(),
                    if *ro { ",readonly" } else { "" }
                ));
            }
            if !w.gpus.is_empty() {
                if w.runtime == Runtime::Podman {
                    for g in w.gpus {
                        argv.push("--device".into());
                        argv.push(format!("nvidia.com/gpu={g}"));
                    }
                } else {
                    argv.push("--gpus".into());
                    argv.push(format!("\"device={}\"", w.gpus.join(",")));
                }
            }
            if w.runtime == Runtime::Docker {
                argv.push("--user".into());
                argv.push(format!("{}:{}", w.user.0, w.user.1));
            }
            env.insert("CUDA_VISIBLE_DEVICES".into(), inside.join(","));
            for k in env.keys().filter(|k| !NOT_PASSED.contains(&k.as_str())) {
                argv.push("--env".into());
                argv.push(k.clone());
            }
            argv.extend(run_args.iter().cloned());
            argv.push("--".into());
        }
        Runtime::Apptainer => {
            argv.extend(["exec", "--pwd"].map(String::from));
            argv.push(w.workdir.display().to_string());
            for (h, t, ro) in &binds {
                argv.push("--bind".into());
                argv.push(format!(
                    "{}:{}{}",
                    h.display(),
                    t.display(),
                    if *ro { ":ro" } else { "" }
                ));
            }
            if !w.gpus.is_empty() {
                argv.push("--nv".into());
            }
            argv.extend(run_args.iter().cloned());
        }
    }
    argv.push(w.container.image.clone());
    argv.extend(w.argv.iter().cloned());
    Ok((argv, env))
}

/// The supervisor's hold on a podman or docker container: it is stopped
/// through the runtime (a docker container is no child of ours; a podman
/// one's PID 1 ignores SIGTERM without a handler) and removed at the end,
/// whatever killed the runtime's client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    /// The runtime and its global flags.
    pub program: Vec<String>,
    /// The container's name.
    pub name: String,
}

impl Control {
    /// The hold on the container `w` describes (none for apptainer, whose
    /// container is the process tree itself).
    pub fn of(w: &Wrap<'_>) -> Option<Control> {
        if w.runtime == Runtime::Apptainer {
            return None;
        }
        let mut program = vec![w.runtime.as_str().to_string()];
        program.extend(w.args.0.iter().cloned());
        Some(Control {
            program,
            name: w.name.to_string(),
        })
    }

    /// `RUNTIME kill --signal SIG NAME`.
    pub fn kill_argv(&self, sig: i32) -> Vec<String> {
        let mut a = self.program.clone();
        a.extend([
            "kill".into(),
            "--signal".into(),
            sig.to_string(),
            self.name.clone(),
        ]);
        a
    }

    /// `RUNTIME rm -f NAME`.
    pub fn rm_argv(&self) -> Vec<String> {
        let mut a = self.program.clone();
        a.extend(["rm".into(), "-f".into(), self.name.clone()]);
        a
    }

    /// Runs `argv` as the task's user with the run's environment, under a
    /// deadline; an error names what failed.
    pub fn call(
        argv: &[String],
        env: &[(String, String)],
        run_as: Option<&super::files::RunAs>,
    ) -> Result<(), String> {
        let Some((program, rest)) = argv.split_first() else {
            return Err("empty command".into());
        };
        let mut cmd = Command::new(program);
        cmd.args(rest)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir("/");
        if let Some(r) = run_as {
            as_user(&mut cmd, r)?;
        }
        let ran = crate::sys::bounded::run(&mut cmd, Instant::now() + CALL_TIMEOUT, |_| {})
            .map_err(|e| format!("`{}`: {e}", argv.join(" ")))?;
        if ran.ok() {
            Ok(())
        } else if ran.timed_out {
            Err(format!(
                "`{}` took longer than {}s",
                argv.join(" "),
                CALL_TIMEOUT.as_secs()
            ))
        } else {
            Err(format!("`{}`: {}", argv.join(" "), ran.first_line()))
        }
    }
}

/// Makes `cmd` drop to `r` (groups, gid, uid: no way back) before it
/// executes, as the task itself does.
pub fn as_user(cmd: &mut Command, r: &super::files::RunAs) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let become_ = super::identity::Become::new(r, Path::new("/"))?;
    // SAFETY: `apply` makes only async-signal-safe calls on memory prepared
    // before the fork.
    unsafe {
        cmd.pre_exec(move || become_.apply().map_err(|(_, e)| e));
    }
    Ok(())
}

/// The container name of run `run` of the daemon whose state dir is
/// `state_dir` (two daemons on one machine never pick the same).
pub fn name(state_dir: &Path, run: i64) -> String {
    use sha2::{Digest, Sha256};
    let h = Sha256::digest(state_dir.as_os_str().as_encoded_bytes());
    let tag: String = h[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("nightjar-{tag}-run-{run}")
}

#[cfg(test)]
#[path = "container_tests.rs"]
mod tests;
