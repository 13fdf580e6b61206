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

/// Most ids one `sacct` is asked for: Linux takes no argument over 128
/// KiB (`-j` with 12,000 ids of 8 digits did not start).
const IDS_PER_CALL: usize = 4096;

/// `sacct`'s arguments for `ids`: one line per job or element (`-X`: no
/// steps), no header, every field as SLURM has it. An element is asked
/// for by its array's id: an element cancelled while its array waited has
/// no record of its own, only the array's range (`812_[3-9]`), which
/// `-j 812_4` does not print. With `-j`, sacct looks back to the epoch,
/// not to midnight.
pub fn sacct_args(ids: &[JobId]) -> Vec<String> {
    let mut jobs: Vec<u64> = ids.iter().map(|i| i.job).collect();
    jobs.sort_unstable();
    jobs.dedup();
    let list: Vec<String> = jobs.iter().map(u64::to_string).collect();
    ["-n", "-P", "-X", "-j", &list.join(","), "-o", SACCT_FORMAT]
        .map(str::to_string)
        .to_vec()
}

/// The indexes of a job array's range as sacct prints it (`3-5`, `1,3-5`,
/// `0-9%2`, `0-9:3`): whether `index` is one of them.
fn in_range(range: &str, index: u32) -> bool {
    let range = range.split('%').next().unwrap_or_default();
    range.split(',').any(|part| {
        let (span, step) = part.split_once(':').unwrap_or((part, "1"));
        let (lo, hi) = span.split_once('-').unwrap_or((span, span));
        match (lo.parse::<u32>(), hi.parse::<u32>(), step.parse::<u32>()) {
            (Ok(lo), Ok(hi), Ok(step)) if step > 0 => {
                (lo..=hi).contains(&index) && (index - lo).is_multiple_of(step)
            }
            _ => false,
        }
    })
}

/// `sacct` [`sacct_args`] output, times as seconds (`SLURM_TIME_FORMAT=%s`):
/// each job's newest record, by its id; each element of `asked` with no
/// record of its own, its array's range's (`812_[4-9]`: elements that
/// never left it). Other lines are skipped.
pub fn parse_sacct(out: &str, asked: &[JobId]) -> HashMap<JobId, Accounted> {
    let mut jobs: HashMap<JobId, Accounted> = HashMap::new();
    let mut ranges: Vec<(u64, &str, Accounted)> = Vec::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        let [id, state, exit, reason, submit, end] = f[..] else {
            continue;
        };
        let range = id
            .split_once("_[")
            .and_then(|(job, r)| Some((job.parse::<u64>().ok()?, r.strip_suffix(']')?)));
        let id = match (JobId::parse(id), range) {
            (Some(id), _) => id,
            (None, Some((job, _))) => JobId::one(job),
            (None, None) => continue,
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
        if let Some((job_id, r)) = range {
            ranges.push((job_id, r, job));
            continue;
        }
        newest(&mut jobs, job);
    }
    let missing: Vec<JobId> = (asked.iter())
        .filter(|a| a.index.is_some() && !jobs.contains_key(a))
        .copied()
        .collect();
    for a in missing {
        let Some(index) = a.index else {
            continue;
        };
        for (_, _, job) in ranges
            .iter()
            .filter(|(j, r, _)| *j == a.job && in_range(r, index))
        {
            newest(
                &mut jobs,
                Accounted {
                    id: a,
                    ..job.clone()
                },
            );
        }
    }
    jobs
}

/// Keeps `job` in `jobs` unless a newer record of its id is there (SLURM
/// reused the id: its state cleared).
fn newest(jobs: &mut HashMap<JobId, Accounted>, job: Accounted) {
    match jobs.get(&job.id) {
        Some(old) if old.submit > job.submit => {}
        _ => {
            jobs.insert(job.id, job);
        }
    }
}

/// Whether `sacct` failed saying that the cluster keeps no accounting.
pub fn disabled(said: &str) -> bool {
    said.contains("accounting storage is disabled")
}

/// What SLURM's accounting has of `ids` (`None` where the cluster keeps
/// none, or `sacct` fails: the caller records what it knows without it).
/// Blocks on `sacct` (at most the commands' limit).
pub fn lookup(ids: &[JobId]) -> Said {
    let sacct = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cmd::run_with("sacct", &args, &[("SLURM_TIME_FORMAT", "%s")])
    };
    lookup_with(ids, &sacct, &crate::time::now_ms, &OFF_UNTIL)
}

/// [`lookup`] with `sacct` run by `sacct`, at `clock`'s time, not asked
/// before `off_until` (ms; moved on when it fails).
pub(super) fn lookup_with(
    ids: &[JobId],
    sacct: &dyn Fn(&[String]) -> anyhow::Result<String>,
    clock: &dyn Fn() -> i64,
    off_until: &AtomicI64,
) -> Said {
    // A run whose job id was never recorded has none to ask for.
    let ids: Vec<JobId> = ids.iter().copied().filter(|i| i.job > 0).collect();
    if ids.is_empty() || off_until.load(Ordering::Relaxed) > clock() {
        return None;
    }
    let mut jobs: Vec<u64> = ids.iter().map(|i| i.job).collect();
    jobs.sort_unstable();
    jobs.dedup();
    let mut said = HashMap::new();
    for chunk in jobs.chunks(IDS_PER_CALL) {
        let these: Vec<JobId> = ids
            .iter()
            .copied()
            .filter(|i| chunk.binary_search(&i.job).is_ok())
            .collect();
        match sacct(&sacct_args(&these)) {
            Ok(out) => said.extend(parse_sacct(&out, &these)),
            Err(e) => {
                failed(&format!("{e:#}"), clock(), off_until);
                return None;
            }
        }
    }
    Some(said)
}

/// Puts `sacct` off after it failed saying `said` at `now` (after the
/// call: one that hung to the commands' limit is not asked again at once).
fn failed(said: &str, now: i64, off_until: &AtomicI64) {
    let off = if disabled(said) {
        OFF_FOR_MS
    } else {
        FAILED_FOR_MS
    };
    off_until.store(now + off, Ordering::Relaxed);
    if disabled(said) {
        tracing::info!(
            "the SLURM cluster keeps no accounting (sacct: {said}); a job's end is read from squeue and its run folder only"
        );
    } else {
        tracing::warn!(
            "cannot read SLURM's accounting (asked again in a minute; a job's end is read from squeue and its run folder meanwhile): {said}"
        );
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
