//! Building the exact run a claimed task gets: environment (cleared to an
//! allow-list), variables substituted, the scratch folder made. The output
//! folder is named here and made by the supervisor, never by the daemon.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::config::Config;
use crate::sandbox::container::{Control, Wrap};
use crate::sandbox::files::{RunAs, RunSpec};
use crate::scheduler::Placement;
use crate::store::RunRow;
use crate::task::environment::Environment;
use crate::task::model::TaskSpec;
use crate::task::vars::{self, Subst};

/// The scratch folder of a run, relative to the state dir.
pub fn scratch_rel(run: i64) -> PathBuf {
    PathBuf::from("scratch").join(run.to_string())
}

/// The scratch folder of a run.
pub fn scratch_dir(cfg: &Config, run: i64) -> PathBuf {
    cfg.scratch_dir().join(run.to_string())
}

/// Whether the task's command, env, output or resume argument names
/// `${NAME}`.
pub fn uses_var(spec: &TaskSpec, name: &str) -> bool {
    let needle = format!("${{{name}}}");
    let resume = spec.checkpoint.as_ref().and_then(|c| c.resume.as_ref());
    spec.command
        .to_argv()
        .iter()
        .chain(spec.env.values())
        .chain(spec.output.iter())
        .chain(resume)
        .any(|t| t.contains(&needle))
}

/// Makes the run's spec. `cgroup` is the per-run cgroup folder, if cgroups are in use.
pub fn build(
    cfg: &Config,
    state: &crate::daemon::statedir::StateDir,
    spec: &TaskSpec,
    run: &RunRow,
    place: &Placement,
    cgroup: Option<PathBuf>,
) -> Result<RunSpec> {
    let run_dir = Path::new(&run.run_dir);
    let argv_templates = spec.command.to_argv();
    let uses = |name: &str| uses_var(spec, name);
    let mut values: BTreeMap<&str, String> = BTreeMap::new();
    values.insert("TASK_ID", run.task_id.to_string());
    values.insert("RUN_ID", run.id.to_string());
    values.insert("WORKDIR", spec.workdir.display().to_string());
    values.insert("TASK_NAME", spec.name.clone());
    values.insert("PROJECT", spec.project.clone());
    values.insert(
        "INPUT_PATH",
        spec.inputs
            .first()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
    values.insert(
        "INPUTS",
        spec.inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
    );
    let run_as = run_as(spec)?;
    if let Some(r) = &run_as {
        // The state dir is root's alone (0700): folders in it are out of the
        // user's reach. A SLURM job that is its owner's has its run folder,
        // and the default output folder in it, handed to them.
        let default_output =
            spec.output.is_none() && uses("OUTPUT_PATH") && !cfg.executor.jobs_are_owners();
        if uses("SCRATCH") || default_output {
            anyhow::bail!(
                "task {} runs as {}, who cannot enter the daemon's state dir {}: {} lives there; give the task an `output` folder of theirs (and use it instead of ${{SCRATCH}})",
                run.task_id,
                r.name,
                cfg.state_dir.display(),
                if uses("SCRATCH") {
                    "${SCRATCH}"
                } else {
                    "the default ${OUTPUT_PATH}"
                }
            );
        }
    }
    // Each folder costs file-system round trips; scratch and the default
    // output folder are made only for tasks that use them (docs/src/guide/task-files.md).
    if uses("SCRATCH") {
        let scratch = scratch_dir(cfg, run.id);
        state
            .make(&scratch_rel(run.id))
            .with_context(|| format!("create scratch {}", scratch.display()))?;
        values.insert("SCRATCH", scratch.display().to_string());
    }
    let expand_with = |t: &str, values: &BTreeMap<&str, String>| {
        vars::expand(t, true, |n| values.get(n).cloned().map(Subst::Value))
            .with_context(|| format!("substitute variables in `{t}`"))
    };
    let output = match &spec.output {
        Some(t) => Some(spec.workdir.join(expand_with(t, &values)?)),
        None if uses("OUTPUT_PATH") => Some(run_dir.join("output")),
        None => None,
    };
    if let Some(output) = &output {
        values.insert("OUTPUT_PATH", output.display().to_string());
    }
    let mut argv: Vec<String> = argv_templates
        .iter()
        .map(|a| expand_with(a, &values))
        .collect::<Result<_>>()?;
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for key in &cfg.sandbox.env_allow {
        if let Ok(v) = std::env::var(key) {
            env.insert(key.clone(), v);
        }
    }
    if let Some(r) = &run_as {
        // The daemon's own account is not the task's: its owner's, from the
        // user database (a task's own `env` may still set them).
        let shell = crate::users::by_uid(r.uid)
            .map(|a| a.shell.display().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "/bin/sh".into());
        env.insert("HOME".into(), r.home.display().to_string());
        env.insert("USER".into(), r.name.clone());
        env.insert("LOGNAME".into(), r.name.clone());
        env.insert("SHELL".into(), shell);
    }
    for (k, v) in &spec.env {
        // The error names the key, never the value (it may be a secret).
        let value = vars::expand(v, true, |n| values.get(n).cloned().map(Subst::Value))
            .with_context(|| format!("substitute variables in env `{k}`"))?;
        env.insert(k.clone(), value);
    }
    for (k, v) in &values {
        env.insert(format!("NIGHTJAR_{k}"), v.clone());
    }
    env.insert("NIGHTJAR_ATTEMPT".into(), run.attempt.to_string());
    let seed = spec.seed.unwrap_or_else(generated_seed);
    env.insert("NIGHTJAR_SEED".into(), seed.to_string());
    let resumed =
        crate::daemon::run::checkpoint::apply(spec, run.attempt, &values, &mut argv, &mut env);
    for (k, v) in &spec.params {
        env.insert(
            format!("NIGHTJAR_PARAM_{}", k.to_ascii_uppercase()),
            v.clone(),
        );
    }
    // Tasks that asked for no GPU see none, so they cannot race into one.
    let by_uuid = cfg.gpu.visible_devices == crate::config::VisibleDevices::Uuid
        && place.uuids.iter().all(|u| !u.is_empty());
    let visible: Vec<String> = if by_uuid {
        place.uuids.clone()
    } else {
        place.gpus.iter().map(|g| g.to_string()).collect()
    };
    env.insert("CUDA_VISIBLE_DEVICES".into(), visible.join(","));
    env.entry("PATH".into())
        .or_insert_with(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut container = None;
    match spec.environment.as_deref() {
        Some(Environment::Container(c)) => {
            let runtime = c.runtime.unwrap_or(cfg.containers.runtime);
            let name = crate::sandbox::container::name(&cfg.state_dir, run.id);
            let user = run_as.as_ref().map_or_else(
                || (crate::users::euid(), crate::users::egid()),
                |r| (r.uid, r.gid),
            );
            let w = Wrap {
                container: c,
                runtime,
                args: cfg.containers.args(runtime),
                name: &name,
                workdir: &spec.workdir,
                output: output.as_deref(),
                gpus: &visible,
                by_uuid,
                user,
                env: &env,
                argv: &argv,
            };
            let (wrapped, runtime_env) = crate::sandbox::container::command(&w)
                .map_err(|e| anyhow::anyhow!("not started: {e}"))?;
            container = Control::of(&w);
            argv = wrapped;
            env = runtime_env;
        }
        Some(e) => crate::daemon::run::environment::activate(&mut env, e),
        None => {}
    }
    Ok(RunSpec {
        run_id: run.id,
        task_id: run.task_id,
        argv,
        seed,
        env: env.into_iter().collect(),
        workdir: spec.workdir.clone(),
        timeout_ms: spec.resources.timeout.map(|d| d.as_millis() as u64),
        grace_ms: cfg.sandbox.grace.as_millis() as u64,
        log_cap: cfg.sandbox.log_cap.as_u64(),
        cpus: place.cpus.clone(),
        mem_limit: spec.resources.mem.map(|m| m.as_u64()),
        cgroup,
        lock_file: cfg.run_lock_path(),
        output,
        output_roots: cfg.output_roots.clone(),
        // The submitter's (checked at submit), else the daemon's at its start.
        umask: Some(
            spec.umask
                .map_or_else(crate::daemon::boot::prepare::task_umask, |m| m & 0o777),
        ),
        classes: cfg.classes.clone(),
        preempt_signal: spec.checkpoint.as_ref().map(|c| c.signal_number()),
        preempt_grace_ms: spec
            .checkpoint
            .as_ref()
            .and_then(|c| c.grace)
            .map(|g| g.as_millis() as u64),
        checkpoint: resumed.as_ref().and_then(|r| r.checkpoint.clone()),
        checkpoint_note: resumed.map(|r| r.note),
        manifest: None,
        run_as,
        container,
        from_job: Vec::new(),
        array_element: None,
    })
}

/// A seed for a run of a task that names none: below 2^32, so numpy's
/// legacy `np.random.seed` takes it as well as torch and Python's `random`.
fn generated_seed() -> u64 {
    let mut bytes = [0u8; 4];
    // SAFETY: getrandom writes at most `len` bytes into the buffer.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        // No entropy to be had (it does not happen on Linux >= 3.17):
        // the clock's nanoseconds still differ from run to run.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        return u64::from(t.subsec_nanos() ^ (t.as_secs() as u32));
    }
    u64::from(u32::from_ne_bytes(bytes))
}

/// Whom the task runs as: its owner, when the daemon is root and the owner
/// is not; resolved now, so a user deleted since the submit never runs (and
/// never as root in their place).
fn run_as(spec: &TaskSpec) -> Result<Option<RunAs>> {
    let Some(owner) = spec.owner.as_ref().filter(|o| o.uid != 0) else {
        return Ok(None);
    };
    if crate::users::euid() != 0 || owner.uid == crate::users::euid() {
        return Ok(None);
    }
    let Some(account) = crate::users::by_uid(owner.uid) else {
        anyhow::bail!(
            "not started: the task's owner `{}` (uid {}) is no longer in the user database; it runs only as its owner, never as root in their place",
            owner.name,
            owner.uid
        );
    };
    Ok(Some(crate::privsep::run_as(account)))
}
