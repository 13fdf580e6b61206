//! `[containers]`: which runtime a container task gets when it names
//! none, and the flags each runtime is given on this machine (a sandboxed
//! or systemd-less host needs some: see docs/src/guide/environments.md).

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::task::environment::Runtime;

/// Container settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContainersConfig {
    /// The runtime of a task whose `container` names none.
    pub runtime: Runtime,
    /// podman's global flags, before `run` (e.g. `--runtime=runc`,
    /// `--cgroup-manager=cgroupfs`, `--events-backend=file`, `--storage-driver=vfs`).
    pub podman_args: Vec<String>,
    /// Flags of `podman run`, before the image (e.g. `--network=none`, `--ulimit=...`, `--init`).
    pub podman_run_args: Vec<String>,
    /// docker's global flags, before `run` (e.g. `--host=unix:///run/docker.sock`).
    pub docker_args: Vec<String>,
    /// Flags of `docker run`, before the image.
    pub docker_run_args: Vec<String>,
    /// apptainer's global flags, before `exec` (e.g. `--quiet`).
    pub apptainer_args: Vec<String>,
    /// Flags of `apptainer exec`, before the image (e.g. `--containall`).
    pub apptainer_run_args: Vec<String>,
}

impl Default for ContainersConfig {
    fn default() -> Self {
        ContainersConfig {
            runtime: Runtime::Podman,
            podman_args: Vec::new(),
            podman_run_args: Vec::new(),
            docker_args: Vec::new(),
            docker_run_args: Vec::new(),
            apptainer_args: Vec::new(),
            apptainer_run_args: Vec::new(),
        }
    }
}

impl ContainersConfig {
    /// The (global, run) flags of `runtime`.
    pub fn args(&self, runtime: Runtime) -> (&[String], &[String]) {
        match runtime {
            Runtime::Podman => (&self.podman_args, &self.podman_run_args),
            Runtime::Docker => (&self.docker_args, &self.docker_run_args),
            Runtime::Apptainer => (&self.apptainer_args, &self.apptainer_run_args),
        }
    }

    /// Every flag must be one word starting with `-` (a bare word would be
    /// taken for the subcommand or the image).
    pub fn validate(&self) -> Result<()> {
        let lists = [
            ("podman_args", &self.podman_args),
            ("podman_run_args", &self.podman_run_args),
            ("docker_args", &self.docker_args),
            ("docker_run_args", &self.docker_run_args),
            ("apptainer_args", &self.apptainer_args),
            ("apptainer_run_args", &self.apptainer_run_args),
        ];
        for (key, list) in lists {
            for a in list {
                if !a.starts_with('-') || a == "--" || a.contains('\0') || a.contains('\n') {
                    bail!(
                        "key `containers.{key}`: `{}` is not a flag; write each flag with its value as one word (`--network=none`)",
                        a.escape_debug()
                    );
                }
            }
        }
        Ok(())
    }
}
