//! SLURM's accounting (`sacct`), where the cluster keeps one (slurmdbd):
//! what became of a job once `squeue` has forgotten it (after the
//! cluster's `MinJobAge`, 300 s by default), how a job whose supervisor
//! reported nothing ended (its state and exit code), and who cancelled a
//! job outside nightjar (`CANCELLED by 1001`), which `squeue` never says.
//!
//! Asked only at such ends, once per poll for all of them. A cluster with
//! accounting off answers `Slurm accounting storage is disabled`: then
//! nothing is asked for ten minutes, and what is recorded comes from
//! `squeue` and the run folder alone, as without this module.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};

use super::cli::JobId;
use super::cmd;

/// The fields asked for, in this order (`--parsable2`: `|` between them).
pub const SACCT_FORMAT: &str = "JobID,State,ExitCode,Reason,Submit,End";

/// How long a cluster that said its accounting is off is not asked again.
const OFF_FOR_MS: i64 = 10 * 60 * 1000;

/// How long after any other failure of `sacct` (slurmdbd down) it is not
/// asked again.
const FAILED_FOR_MS: i64 = 60 * 1000;

/// Until when (ms since the epoch) accounting is taken to be off.
static OFF_UNTIL: AtomicI64 = AtomicI64::new(0);

/// What SLURM's accounting has of some jobs, by id (`None`: the cluster
/// keeps none, or it did not answer).
pub type Said = Option<HashMap<JobId, Accounted>>;

/// One job (or array element) as SLURM's accounting has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accounted {
    /// The job, or the array's element.
    pub id: JobId,
    /// Its state's name (`CANCELLED`, `FAILED`, `RUNNING`, ...).
    pub state: String,
    /// Who cancelled it, where it was cancelled (`CANCELLED by 1001`).
    pub by: Option<u32>,
    /// Its batch step's exit code (`3` of `3:0`): nightjar's supervisor's,
    /// not the task's.
    pub exit_code: i32,
    /// The signal that ended its batch step (`9` of `0:9`), if one did.
    pub signal: Option<i32>,
    /// SLURM's reason (`None` where it gives none).
    pub reason: String,
    /// When it was submitted (s since the epoch): where SLURM reused an
    /// id (its state cleared), the newest record is the job's.
    pub submit: i64,
    /// When it ended (ms since the epoch), once it has.
    pub end_ms: Option<i64>,
}

impl Accounted {
    /// Whether accounting has it over.
    pub fn ended(&self) -> bool {
        super::cli::ended(&self.state)
    }

    /// What its batch step's end says, for a message: `exit code 3`,
    /// `killed by signal 9`.
    pub fn step_end(&self) -> String {
        match self.signal {
            Some(s) => format!("killed by signal {s}"),
            None => format!("exit code {}", self.exit_code),
        }
    }
}

/// `sacct`'s arguments for `ids`: one line per job or element (`-X`: no
/// steps), no header, every field as SLURM has it. With `-j`, sacct looks
/// back to the epoch, not to midnight.
pub fn sacct_args(ids: &[JobId]) -> Vec<String> {
    let list: Vec<String> = ids.iter().map(JobId::to_string).collect();
    ["-n", "-P", "-X", "-j", &list.join(","), "-o", SACCT_FORMAT]
        .map(str::to_string)
        .to_vec()
}

/// `sacct` [`sacct_args`] output, times as seconds (`SLURM_TIME_FORMAT=%s`):
/// each job's newest record, by its id. Lines that do not parse (a
/// pending array's range, `812_[4-9]`) are skipped.
pub fn parse_sacct(out: &str) -> HashMap<JobId, Accounted> {
    let mut jobs: HashMap<JobId, Accounted> = HashMap::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        let [id, state, exit, reason, submit, end] = f[..] else {
            continue;
        };
        let Some(id) = JobId::parse(id) else {
            continue;
        };
        let mut words = state.split_whitespace();
        let Some(name) = words.next() else {
            continue;
        };
        let by = match (words.next(), words.next()) {
            (Some("by"), Some(uid)) => uid.parse().ok(),
            _ => None,
        };
        let (code, signal) = exit.split_once(':').unwrap_or((exit, "0"));
        let signal = signal.parse::<i32>().ok().filter(|&s| s != 0);
        let job = Accounted {
            id,
            state: name.to_string(),
            by,
            exit_code: code.parse().unwrap_or(0),
            signal,
            reason: reason.to_string(),
            submit: submit.parse().unwrap_or(0),
            end_ms: end.parse::<i64>().ok().map(|s| s * 1000),
        };
        match jobs.get(&id) {
            Some(old) if old.submit > job.submit => {}
            _ => {
                jobs.insert(id, job);
            }
        }
    }
    jobs
}

/// Whether `sacct` failed saying that the cluster keeps no accounting.
pub fn disabled(said: &str) -> bool {
    said.contains("accounting storage is disabled")
}

/// What SLURM's accounting has of `ids` (`None` where the cluster keeps
/// none, or `sacct` fails: the caller records what it knows without it).
/// Blocks on `sacct` (at most the commands' limit).
pub fn lookup(ids: &[JobId]) -> Said {
    let now = crate::time::now_ms();
    // A run whose job id was never recorded has none to ask for.
    let ids: Vec<JobId> = ids.iter().copied().filter(|i| i.job > 0).collect();
    if ids.is_empty() || OFF_UNTIL.load(Ordering::Relaxed) > now {
        return None;
    }
    let args = sacct_args(&ids);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match cmd::run_with("sacct", &args, &[("SLURM_TIME_FORMAT", "%s")]) {
        Ok(out) => Some(parse_sacct(&out)),
        Err(e) => {
            let said = format!("{e:#}");
            let off = if disabled(&said) {
                OFF_FOR_MS
            } else {
                FAILED_FOR_MS
            };
            OFF_UNTIL.store(now + off, Ordering::Relaxed);
            if disabled(&said) {
                tracing::info!(
                    "the SLURM cluster keeps no accounting (sacct: {said}); a job's end is read from squeue and its run folder only"
                );
            } else {
                tracing::warn!(
                    "cannot read SLURM's accounting (asked again in a minute; a job's end is read from squeue and its run folder meanwhile): {said}"
                );
            }
            None
        }
    }
}

/// Who cancelled a job outside nightjar, for a message: `by alice (uid
/// 1001)` where accounting says, else who it may have been.
pub fn cancelled_by(by: Option<u32>) -> String {
    match by {
        Some(uid) => match crate::users::by_uid(uid) {
            Some(a) => format!("by {} (uid {uid})", a.name),
            None => format!("by uid {uid}"),
        },
        None => "(scancel by a user or an administrator)".to_string(),
    }
}

#[cfg(test)]
#[path = "acct_tests.rs"]
mod tests;
