//! What a job asks SLURM for, as `sbatch`'s arguments: from its task (or
//! its tasks: a job array's elements ask alike) and the executor's keys.

use std::time::Duration;

use crate::config::ExecutorConfig;

/// What a job is asked for, from its task (or its tasks: a job array's
/// elements ask alike).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobAsk {
    /// The job's name: `nightjar-<task>`, or `nightjar-batch-<batch>` for
    /// a job array.
    pub name: String,
    /// The comment that finds the job again: [`comment`] or
    /// [`batch_comment`].
    pub comment: String,
    /// A job array of this many elements (indexes `0..n`), one per run.
    pub array: Option<usize>,
    /// GPUs (`--gres=gpu:N`).
    pub gpus: u32,
    /// Cores (`--cpus-per-task`).
    pub cpus: Option<u32>,
    /// Memory, bytes (`--mem`, in MiB rounded up).
    pub mem: Option<u64>,
    /// The run's own limit, enforced by the supervisor; SLURM's `--time`
    /// is this plus the grace plus a minute, so the supervisor's own
    /// class (`timeout`) is what is recorded.
    pub timeout: Option<Duration>,
    /// The cancel grace.
    pub grace: Duration,
    /// The (uid, gid) the job is the user's of, when not the daemon's.
    pub owner: Option<(u32, u32)>,
}

/// `sbatch`'s arguments for one run whose batch script is `script` and whose
/// SLURM output goes to `output`.
pub fn sbatch_args(
    cfg: &ExecutorConfig,
    ask: &JobAsk,
    script: &std::path::Path,
    output: &std::path::Path,
) -> Vec<String> {
    let mut a = vec![
        "--parsable".to_string(),
        // The batch step's environment is SLURM's own plus nothing of the
        // daemon's: the spec carries everything the task gets.
        "--export=NIL".into(),
        // A node failure ends the job; nightjar's retry path (not SLURM's
        // requeue) decides what happens next, so each try is one attempt.
        "--no-requeue".into(),
        format!("--job-name={}", ask.name),
        format!("--comment={}", ask.comment),
        format!("--output={}", output.display()),
        "--chdir=/".into(),
    ];
    if let Some((uid, gid)) = ask.owner {
        a.push(format!("--uid={uid}"));
        a.push(format!("--gid={gid}"));
    }
    if let Some(n) = ask.array.filter(|&n| n > 0) {
        a.push(format!("--array=0-{}", n - 1));
    }
    if ask.gpus > 0 {
        a.push(format!("--gres=gpu:{}", ask.gpus));
    }
    if let Some(c) = ask.cpus.filter(|&c| c > 0) {
        a.push(format!("--cpus-per-task={c}"));
    }
    if let Some(m) = ask.mem {
        a.push(format!("--mem={}M", m.div_ceil(1 << 20).max(1)));
    }
    if let Some(t) = ask.timeout {
        a.push(format!(
            "--time={}",
            time_limit(
                t.saturating_add(ask.grace)
                    .saturating_add(Duration::from_secs(60))
            )
        ));
    }
    for (key, value) in [
        ("--partition", &cfg.partition),
        ("--account", &cfg.account),
        ("--qos", &cfg.qos),
    ] {
        if !value.is_empty() {
            a.push(format!("{key}={value}"));
        }
    }
    a.extend(cfg.extra_args.iter().cloned());
    a.push(script.display().to_string());
    a
}

/// A duration as SLURM's `--time` (`D-HH:MM:SS`), rounded up to a minute
/// (SLURM's own resolution); `UNLIMITED` past what sbatch can hold (it
/// reads minutes into an `int`: one more day wraps to a limit of hours).
pub fn time_limit(d: Duration) -> String {
    let minutes = d.as_secs().div_ceil(60).max(1);
    if minutes > i32::MAX as u64 {
        return "UNLIMITED".into();
    }
    let (days, rest) = (minutes / 1440, minutes % 1440);
    format!("{days}-{:02}:{:02}:00", rest / 60, rest % 60)
}
