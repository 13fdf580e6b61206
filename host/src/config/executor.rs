//! `[executor]`: where runs are carried out: on this machine (`local`, the
//! default) or as jobs of a SLURM cluster (`slurm`), whose batch step is
//! nightjar's own supervisor on the node.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;

/// Which executor carries out runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// A supervisor process per run on this machine.
    #[default]
    Local,
    /// A SLURM job per run (`sbatch`), its batch step nightjar's supervisor.
    Slurm,
}

/// `[executor]`: the executor and, for `slurm`, how jobs are submitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExecutorConfig {
    /// `local` or `slurm`.
    pub kind: ExecutorKind,
    /// The SLURM partition jobs go to; empty: the cluster's default.
    pub partition: String,
    /// The SLURM account jobs are charged to; empty: the user's default.
    pub account: String,
    /// The SLURM QOS of the jobs; empty: the default.
    pub qos: String,
    /// More `sbatch` arguments (`--constraint=a100`); none may set what
    /// nightjar sets itself (see [`RESERVED`]).
    pub extra_args: Vec<String>,
    /// How often the cluster's queue is read (`squeue`).
    #[serde(with = "humantime_serde_compat")]
    pub poll: Duration,
    /// A folder every node sees at the same path: run folders live there.
    pub shared_dir: PathBuf,
    /// Most of this daemon's jobs waiting in SLURM at once: the lab's order
    /// is kept by nightjar, not by SLURM's backfill over a flood.
    pub max_pending: u32,
    /// How the job script reads the node's GPUs, beside the supervisor, for
    /// a run's GPU record, series and energy: `auto` (NVML where the node
    /// has a driver), `nvml`, `nvml:/path/to/libnvidia-ml.so`, or `none`.
    pub node_gpus: String,
    /// Whose job SLURM sees a task's run as: `owner` (a root daemon submits
    /// it with `--uid` of the task's owner, so SLURM's per-user limits and
    /// accounting tell the lab's users apart) or `daemon` (the daemon's
    /// user, the supervisor dropping the task to its owner on the node).
    pub job_user: JobUser,
}

/// Whose job a SLURM run is (`[executor] job_user`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobUser {
    /// The task's owner: `sbatch --uid`, the run folder handed to the owner.
    #[default]
    Owner,
    /// The daemon's user (a shared folder where root cannot hand a folder
    /// to another user: NFS with `root_squash`).
    Daemon,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            kind: ExecutorKind::Local,
            partition: String::new(),
            account: String::new(),
            qos: String::new(),
            extra_args: Vec::new(),
            poll: Duration::from_secs(5),
            shared_dir: PathBuf::new(),
            max_pending: 20,
            node_gpus: "auto".into(),
            job_user: JobUser::Owner,
        }
    }
}

/// The `sbatch` options nightjar sets from the task or from its own keys,
/// which `extra_args` may not set again (long form, then short).
pub const RESERVED: &[(&str, Option<&str>)] = &[
    ("--job-name", Some("-J")),
    ("--comment", None),
    ("--gres", None),
    ("--gpus", Some("-G")),
    ("--gpus-per-node", None),
    ("--gpus-per-task", None),
    ("--time", Some("-t")),
    ("--output", Some("-o")),
    ("--error", Some("-e")),
    ("--input", Some("-i")),
    ("--chdir", Some("-D")),
    ("--uid", None),
    ("--gid", None),
    ("--wrap", None),
    ("--array", Some("-a")),
    ("--parsable", None),
    ("--export", None),
    ("--export-file", None),
    ("--mem", None),
    ("--mem-per-cpu", None),
    ("--mem-per-gpu", None),
    ("--cpus-per-task", Some("-c")),
    ("--dependency", Some("-d")),
    ("--hold", Some("-H")),
    ("--requeue", None),
    ("--no-requeue", None),
    ("--signal", None),
    ("--open-mode", None),
    ("--partition", Some("-p")),
    ("--account", Some("-A")),
    ("--qos", Some("-q")),
    ("--ntasks", Some("-n")),
    ("--nodes", Some("-N")),
    ("--kill-on-invalid-dep", None),
    // The job on another cluster: squeue here would not list it, and the
    // run would be taken for lost and run again while it runs.
    ("--clusters", Some("-M")),
    // sbatch would wait for the job's end, holding up every start.
    ("--wait", Some("-W")),
    // No job is submitted: every run would fail.
    ("--test-only", None),
];

/// sbatch's short options that take no value, which may bundle with the
/// next (`-vt5` is `-v -t5`).
const SHORT_FLAGS: &[char] = &['h', 'H', 'O', 'Q', 's', 'u', 'v', 'V', 'W'];

impl ExecutorConfig {
    /// Whether SLURM jobs are their tasks' owners' (`job_user = "owner"`
    /// with a daemon run as root, which alone can submit as another user).
    pub fn jobs_are_owners(&self) -> bool {
        self.kind == ExecutorKind::Slurm
            && self.job_user == JobUser::Owner
            && crate::users::euid() == 0
    }

    /// Checks the keys (not the cluster: that is done at the daemon's start).
    pub fn validate(&self) -> Result<()> {
        if self.kind == ExecutorKind::Local {
            return Ok(());
        }
        crate::gpu::node::check_backend(&self.node_gpus)?;
        if self.shared_dir.as_os_str().is_empty() {
            bail!(
                "key `executor.shared_dir` is empty: with `kind = \"slurm\"` run folders live in a folder every node sees at the same path; set it (for example \"/shared/nightjar\")"
            );
        }
        if !self.shared_dir.is_absolute() {
            bail!(
                "key `executor.shared_dir` ({}) must be an absolute path: nodes see it at the same path",
                self.shared_dir.display()
            );
        }
        if self
            .shared_dir
            .to_string_lossy()
            .contains(['%', '\n', '\\'])
        {
            bail!(
                "key `executor.shared_dir` ({}) holds a `%`, a backslash or a newline: sbatch expands `%j`-style patterns in the output path it is given (a job array's `%a` among them), and a backslash anywhere in that path stops it; use a path without them",
                self.shared_dir.display()
            );
        }
        if self.poll < Duration::from_millis(200) || self.poll > Duration::from_secs(600) {
            bail!(
                "key `executor.poll` ({}) must be between 200ms and 10m",
                humantime::format_duration(self.poll)
            );
        }
        if self.max_pending == 0 {
            bail!(
                "key `executor.max_pending` is 0: no job could ever wait in SLURM, so none would be submitted; use at least 1"
            );
        }
        for a in &self.extra_args {
            if let Some((long, _)) = reserved(a) {
                bail!(
                    "key `executor.extra_args`: `{a}` sets {long}, which nightjar sets itself from the task or from its own key; remove it (partition, account and qos have keys of their own)"
                );
            }
            if a.chars().any(char::is_whitespace) {
                bail!(
                    "key `executor.extra_args`: `{a}` holds a space; sbatch takes each entry as one argument, so write one option per entry as `--name=value`"
                );
            }
            if a == "--" {
                bail!(
                    "key `executor.extra_args`: `--` ends sbatch's options, so what follows it would be taken as the batch script in place of nightjar's own; remove it"
                );
            }
            if !a.starts_with('-') {
                bail!(
                    "key `executor.extra_args`: `{a}` is not an option; every entry is one `--name=value` (a script or command here would replace nightjar's own batch step)"
                );
            }
        }
        Ok(())
    }
}

/// The reserved option `arg` sets, if it sets one: `--time=1:00`, `--time`,
/// `-t1:00`, `-t` and `-vt1:00` all set `--time`.
fn reserved(arg: &str) -> Option<&'static (&'static str, Option<&'static str>)> {
    // The short options of a bundle: the flags, then the first that takes
    // a value (the rest of the entry is that value).
    let shorts: Vec<char> = match arg.strip_prefix('-') {
        Some(rest) if !rest.starts_with('-') => {
            let n = rest.chars().take_while(|c| SHORT_FLAGS.contains(c)).count();
            rest.chars().take(n + 1).collect()
        }
        _ => Vec::new(),
    };
    RESERVED.iter().find(|(long, short)| {
        let is_long = arg == *long || arg.starts_with(&format!("{long}="));
        // Any unambiguous prefix of a long option is that option to sbatch
        // (getopt_long): `--tim=1` is `--time`.
        let is_prefix = arg.starts_with("--")
            && arg.len() > 3
            && long.starts_with(arg.split('=').next().unwrap_or(arg));
        let is_short = short.is_some_and(|s| s.chars().nth(1).is_some_and(|c| shorts.contains(&c)));
        is_long || is_prefix || is_short
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slurm(args: &[&str]) -> ExecutorConfig {
        ExecutorConfig {
            kind: ExecutorKind::Slurm,
            shared_dir: "/shared/nj".into(),
            extra_args: args.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn extra_args_that_set_what_nightjar_sets_are_refused_in_every_spelling() {
        for a in [
            "--time=1:00",
            "--time",
            "-t10",
            "--tim=5",
            "--gres=gpu:2",
            "-J",
            "--uid=0",
            "--wrap=id",
            // Bundled after options that take no value.
            "-vt5",
            "-QJx",
            "-vvo/etc/passwd",
            "-sH",
            // On another cluster, squeue here would not see the job.
            "-Mother",
            "--clusters=other",
            "--wait",
        ] {
            let e = slurm(&[a]).validate().unwrap_err().to_string();
            assert!(
                e.contains("executor.extra_args") && e.contains(a),
                "{a}: {e}"
            );
        }
        assert!(
            slurm(&[
                "--constraint=a100",
                "--exclusive",
                "--nice=10",
                "-Ca100",
                "-vCt4"
            ])
            .validate()
            .is_ok(),
            "a value that holds a reserved letter is no option"
        );
        let e = slurm(&["--", "-xrun.sh"])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("`--` ends sbatch's options"), "{e}");
        let e = slurm(&["--time 5"]).validate().unwrap_err().to_string();
        assert!(e.contains("holds a space"), "{e}");
        let e = slurm(&["--constraint=a100 b"])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds a space"), "{e}");
        let mut c = slurm(&[]);
        for odd in ["/shared/%j", "/shared/a\\b", "/shared/a\nb"] {
            c.shared_dir = odd.into();
            assert!(
                c.validate()
                    .unwrap_err()
                    .to_string()
                    .contains("holds a `%`, a backslash or a newline"),
                "{odd:?}"
            );
        }
        let e = slurm(&["run.sh"]).validate().unwrap_err().to_string();
        assert!(e.contains("not an option"), "{e}");
    }

    #[test]
    fn slurm_needs_an_absolute_shared_dir_and_room_to_submit() {
        let mut c = slurm(&[]);
        c.shared_dir = PathBuf::new();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("executor.shared_dir")
        );
        c.shared_dir = "shared".into();
        assert!(c.validate().unwrap_err().to_string().contains("absolute"));
        let mut c = slurm(&[]);
        c.max_pending = 0;
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("executor.max_pending")
        );
        assert!(
            ExecutorConfig::default().validate().is_ok(),
            "local needs nothing"
        );
    }
}
