//! `nightjar submit FILE` or `nightjar submit [FLAGS] -- CMD ARGS`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use bytesize::ByteSize;

use super::Ctx;
use super::table::clean;
use nightjar_core::api;
use nightjar_core::task::environment::{ContainerDef, EnvironmentDef};
use nightjar_core::task::file::{self, CommandDef, DepRef, TaskDef};
use nightjar_core::task::model::{CommandSpec, NewEntry, Priority, Resources, RetryPolicy};
use nightjar_core::task::resolve::resolve;

/// Flags of `submit`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A task file (.toml, .yaml); give either this or `-- CMD ARGS`.
    #[arg(long, short = 'f')]
    pub file: Option<PathBuf>,
    /// Task name (default: the program's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Project the task is accounted to.
    #[arg(long)]
    pub project: Option<String>,
    /// low, normal, high or urgent.
    #[arg(long, default_value = "normal")]
    pub priority: Priority,
    /// GPUs needed.
    #[arg(long, default_value_t = 0)]
    pub gpus: u32,
    /// GPU memory per GPU (e.g. 20GiB).
    #[arg(long)]
    pub gpu_mem: Option<ByteSize>,
    /// Cores to pin to.
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Memory limit (e.g. 8GiB).
    #[arg(long)]
    pub mem: Option<ByteSize>,
    /// Wall-clock limit (e.g. 2h, 30m).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Start after this task succeeded (repeatable).
    #[arg(long)]
    pub after: Vec<i64>,
    /// Start after this task ended, whatever the outcome (repeatable).
    #[arg(long)]
    pub after_any: Vec<i64>,
    /// Attempts in all (1 = no retry).
    #[arg(long, default_value_t = 1)]
    pub attempts: u32,
    /// Wait before a retry (doubled each time).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub backoff: std::time::Duration,
    /// Failure classes retried, comma-separated (default: network, lost,
    /// preempted, gpu-oom).
    #[arg(long, value_delimiter = ',', value_parser = parse_class)]
    pub retry_on: Vec<nightjar_core::api::wire::RunClass>,
    /// Working directory (default: the current one).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Environment variable KEY=VALUE (repeatable).
    #[arg(long = "env", short = 'e')]
    pub env: Vec<String>,
    /// Input file (repeatable; must exist).
    #[arg(long = "input")]
    pub inputs: Vec<PathBuf>,
    /// Output folder (may use ${TASK_ID} etc.).
    #[arg(long)]
    pub output: Option<String>,
    /// Recurring schedule (cron, daily@03:00, hourly:15, weekly@mon04:00).
    #[arg(long)]
    pub schedule: Option<String>,
    /// Submit held: nothing starts until `nightjar release`.
    #[arg(long)]
    pub hold: bool,
    /// A policy may stop it and queue it again (the attempt is not counted).
    #[arg(long)]
    pub preemptible: bool,
    /// The seed each run gets as NIGHTJAR_SEED (default: one generated per
    /// run and recorded; `nightjar rerun` reuses the run's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Complete the task from an earlier successful run with the same
    /// command, inputs, clean git commit, environment and settings.
    #[arg(long, conflicts_with = "no_cache")]
    pub cache: bool,
    /// Run for real even if the task file says `cache = true` (the result
    /// still feeds the cache).
    #[arg(long)]
    pub no_cache: bool,
    /// Run in this Python virtual environment (its `bin` first on PATH, VIRTUAL_ENV set).
    #[arg(long, value_name = "PATH")]
    pub venv: Option<PathBuf>,
    /// Run in this conda environment: a name (looked up with `conda env
    /// list`) or a prefix path.
    #[arg(long, value_name = "NAME")]
    pub conda: Option<String>,
    /// Run inside this container image (workdir and output mounted at the same paths).
    #[arg(long, value_name = "IMAGE", allow_hyphen_values = true)]
    pub container: Option<String>,
    /// podman, docker or apptainer (default: the daemon's `[containers] runtime`).
    #[arg(long, value_name = "RUNTIME", requires = "container")]
    pub container_runtime: Option<nightjar_core::task::environment::Runtime>,
    /// Extra container bind mount HOST[:TARGET][:ro] (repeatable).
    #[arg(long = "mount", value_name = "MOUNT", requires = "container")]
    pub mounts: Vec<String>,
    /// Queue nothing: check the submission as `submit` would and print when
    /// it would start and end, on which GPUs, and its energy and cost (as
    /// `nightjar estimate` forecasts a waiting task).
    #[arg(long)]
    pub dry_run: bool,
    /// Hash every input again for the submit manifest, whatever the hash
    /// cache holds (a file changed without its size, mtime or ctime moving).
    #[arg(long)]
    pub verify: bool,
    /// A task file, or the command and its arguments after `--`. A lone
    /// argument ending in .toml, .yaml or .yml is always read as a task
    /// file (one that is not there is refused, not run).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// Submits and prints the new ids.
pub fn run(mut ctx: Ctx, a: Args) -> Result<i32> {
    // `submit --held -- true` would queue `--held` as the command: a first
    // word that looks like a flag is one, unless it came after `--`.
    let before_dashes = |word: &str| {
        std::env::args_os()
            .take_while(|w| w != "--")
            .any(|w| w == word)
    };
    if let Some(first) = a.command.first()
        && first.starts_with('-')
        && before_dashes(first)
    {
        bail!(
            "unknown flag `{first}` for `nightjar submit` (`nightjar submit --help` lists them); a command that starts with `-` goes after `--`"
        );
    }
    let verify = a.verify;
    let no_cache = a.no_cache;
    let dry_run = a.dry_run;
    let (defs, base, default_name, origin) = definitions(a)?;
    let mut entries =
        resolve(&defs, &base, &default_name).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    // Tasks run with the submitter's umask, as a command run by hand would.
    let umask = own_umask();
    for e in &mut entries {
        e.no_cache = no_cache;
        for m in &mut e.members {
            m.umask = Some(umask);
        }
        if let Some(g) = &mut e.grid {
            g.template.umask = Some(umask);
        }
    }
    if dry_run {
        let report = ctx
            .client
            .call(api::Forecast {
                ids: Vec::new(),
                entries: entries.into_iter().map(NewEntry::compact).collect(),
                brief: false,
            })
            .with_context(|| format!("{origin}: not forecast"))?;
        if ctx.json {
            super::print_json(&report)?;
        } else {
            super::estimate::print_text(&report);
        }
        return Ok(0);
    }
    // What the summary prints, kept before the entries go to the daemon.
    let shown: Vec<(String, usize, bool, Option<String>)> = entries
        .iter()
        .map(|e| {
            (
                e.name.clone(),
                e.members.len(),
                e.is_sweep,
                e.schedule.clone(),
            )
        })
        .collect();
    let ids = ctx
        .client
        .call(api::Submit {
            // A sweep goes as its template and values (the daemon expands it).
            entries: entries.into_iter().map(NewEntry::compact).collect(),
            verify,
        })
        .with_context(|| format!("{origin}: not submitted"))?;
    if ctx.json {
        let out: Vec<_> = ids
            .iter()
            .zip(&shown)
            .map(|(id, (name, members, ..))| serde_json::json!({ "id": id, "name": name, "members": members }))
            .collect();
        super::print_json(&out)?;
    } else {
        for (id, (name, members, sweep, schedule)) in ids.iter().zip(&shown) {
            match (sweep, schedule) {
                (true, _) => println!("{id}\t{name} (sweep of {members} tasks)"),
                (_, Some(s)) => println!("{id}\t{name} (recurring: {})", clean(s)),
                _ => println!("{id}\t{name}"),
            }
        }
    }
    Ok(0)
}

/// The task definitions and where relative paths start from.
fn definitions(a: Args) -> Result<(Vec<TaskDef>, PathBuf, String, String)> {
    let cwd = std::env::current_dir().context("current directory")?;
    let file = match (&a.file, a.command.as_slice()) {
        (Some(f), []) => Some(f.clone()),
        (Some(_), _) => bail!("give a task file or a command after `--`, not both"),
        (None, [one]) if is_task_file(one) => Some(PathBuf::from(one)),
        // A lone `x.toml` that is not there is a mistyped task file, not a
        // program to queue (it was queued, and failed at its start).
        (None, [one]) if has_task_file_extension(one) => bail!(
            "task file {one}: no such file (a lone argument ending in .toml, .yaml or .yml is read as a task file; check the name, or `ls` the folder)"
        ),
        (None, []) => bail!(
            "nothing to submit: give a task file (`nightjar submit task.toml`) or a command (`nightjar submit -- python train.py`)"
        ),
        (None, _) => None,
    };
    let environment = EnvironmentDef {
        conda: a.conda.clone(),
        venv: a.venv.clone(),
        container: a.container.clone().map(|image| ContainerDef {
            image,
            runtime: a.container_runtime,
            mounts: a.mounts.clone(),
        }),
    };
    if let Some(path) = file {
        if !environment.is_empty() {
            bail!(
                "--venv, --conda and --container apply to `submit -- CMD`; for a task file, write them in its [environment] table"
            );
        }
        let unused = flags_a_file_sets(&a);
        if !unused.is_empty() {
            bail!(
                "{} appl{} to `submit -- CMD`; for a task file {}, write {} in the file (only --hold, --seed, --cache and --no-cache apply to a file's tasks)",
                unused.join(", "),
                if unused.len() == 1 { "ies" } else { "y" },
                path.display(),
                if unused.len() == 1 { "it" } else { "them" }
            );
        }
        let mut defs = file::read(&path)?;
        // `--hold`, `--seed` and `--cache` apply to every task of the file.
        for d in &mut defs {
            d.seed = a.seed.or(d.seed);
            d.cache |= a.cache;
            d.hold |= a.hold;
        }
        let abs = cwd.join(&path);
        let base = abs.parent().map(PathBuf::from).unwrap_or(cwd);
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("task")
            .to_string();
        return Ok((defs, base, stem, format!("task file {}", path.display())));
    }
    let program = &a.command[0];
    let default_name = a.name.clone().unwrap_or_else(|| {
        std::path::Path::new(program)
            .file_name()
            .and_then(|s| s.to_str())
            .unwrap_or("task")
            .to_string()
    });
    let mut env = BTreeMap::new();
    for kv in &a.env {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--env `{kv}`: write it as KEY=VALUE"))?;
        env.insert(k.to_string(), v.to_string());
    }
    let def = TaskDef {
        name: a.name,
        project: a.project,
        command: CommandDef(CommandSpec::Argv(a.command.clone())),
        workdir: a.workdir,
        env,
        inputs: a.inputs,
        output: a.output,
        priority: a.priority,
        resources: Resources {
            gpus: a.gpus,
            gpu_mem: a.gpu_mem,
            cpus: a.cpus,
            mem: a.mem,
            timeout: a.timeout,
        },
        after: a.after.into_iter().map(DepRef::Id).collect(),
        after_any: a.after_any.into_iter().map(DepRef::Id).collect(),
        schedule: a.schedule,
        retry: RetryPolicy {
            max_attempts: a.attempts,
            backoff: a.backoff,
            on: if a.retry_on.is_empty() {
                RetryPolicy::default_on()
            } else {
                a.retry_on
            },
            ..RetryPolicy::default()
        },
        sweep: BTreeMap::new(),
        hold: a.hold,
        preemptible: a.preemptible,
        validate: Vec::new(),
        checkpoint: None,
        seed: a.seed,
        cache: a.cache,
        environment: (!environment.is_empty()).then_some(environment),
    };
    Ok((vec![def], cwd, default_name, "command line".to_string()))
}

fn is_task_file(arg: &str) -> bool {
    has_task_file_extension(arg) && std::path::Path::new(arg).is_file()
}

/// Whether `arg` ends as a task file's name does (.toml, .yaml, .yml).
fn has_task_file_extension(arg: &str) -> bool {
    matches!(
        std::path::Path::new(arg)
            .extension()
            .and_then(|e| e.to_str()),
        Some("toml" | "yaml" | "yml")
    )
}

/// A failure class named on the command line.
fn parse_class(s: &str) -> Result<nightjar_core::api::wire::RunClass, String> {
    use nightjar_core::api::wire::RunClass;
    RunClass::parse(s.trim()).ok_or_else(|| {
        format!(
            "`{s}` is not a run class; one of: {}",
            RunClass::ALL.map(RunClass::as_str).join(", ")
        )
    })
}

/// The flags given that only `submit -- CMD` reads: a task file says
/// these itself, and one given beside a file would be silently lost.
fn flags_a_file_sets(a: &Args) -> Vec<&'static str> {
    let defaults = RetryPolicy::default();
    [
        ("--name", a.name.is_some()),
        ("--project", a.project.is_some()),
        ("--priority", a.priority != Priority::Normal),
        ("--gpus", a.gpus != 0),
        ("--gpu-mem", a.gpu_mem.is_some()),
        ("--cpus", a.cpus.is_some()),
        ("--mem", a.mem.is_some()),
        ("--timeout", a.timeout.is_some()),
        ("--after", !a.after.is_empty()),
        ("--after-any", !a.after_any.is_empty()),
        ("--attempts", a.attempts != 1),
        ("--backoff", a.backoff != defaults.backoff),
        ("--retry-on", !a.retry_on.is_empty()),
        ("--workdir", a.workdir.is_some()),
        ("--env", !a.env.is_empty()),
        ("--input", !a.inputs.is_empty()),
        ("--output", a.output.is_some()),
        ("--schedule", a.schedule.is_some()),
        ("--preemptible", a.preemptible),
    ]
    .into_iter()
    .filter_map(|(flag, set)| set.then_some(flag))
    .collect()
}

/// This process's umask (read by setting it and putting it back: the
/// client is single-threaded here).
pub(crate) fn own_umask() -> u32 {
    // SAFETY: umask cannot fail; the old mask is put back at once.
    unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old as u32
    }
}
