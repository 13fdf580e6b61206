//! What is said to and read from SLURM's commands, as pure functions: the
//! `sbatch` arguments a run becomes, `squeue`'s lines, `sinfo`'s totals,
//! and what a job's end means for its run when the supervisor left none.

use crate::store::{RunClass, RunOutcome};

/// The squeue format this module parses: id (`812`, or `812_3` for an
/// element of a job array), state, reason, nodes, user id, comment (last:
/// another user's comment may hold a `|`), then `|` and a listing's own
/// end mark ([`squeue_call`]): a comment may hold a newline too, and what
/// follows it would read as a line of its own (a job of the daemon's user
/// with a run's comment), but nobody can know the mark.
const SQUEUE_FORMAT: &str = "%i|%T|%r|%N|%U|%k|";

/// `squeue`'s arguments and environment, each job's line ending with
/// `|end`: every job SLURM keeps, ended ones too (`-t all`) and those in
/// hidden partitions (`-a`: a user's squeue leaves them out, and a live
/// job missing from the list is taken for one SLURM forgot), each element
/// of a job array on a line of its own (`-r`: else the elements still
/// pending are one line, `812_[4-999]`). Not `-u`: squeue given a user it
/// cannot resolve lists nothing and exits 0; [`parse_squeue`] keeps the
/// daemon's user's jobs instead. The format, and so the mark, goes in
/// `SQUEUE_FORMAT` (which `-o` would override), never in an argument:
/// any user reads a process's arguments (`/proc/<pid>/cmdline`), and one
/// who read the mark while squeue started could end a comment of theirs
/// with it; its environment is its own user's to read.
pub fn squeue_call(end: &str) -> (Vec<String>, Vec<(&'static str, String)>) {
    let args = ["-h", "-a", "-r", "-t", "all"].map(str::to_string).to_vec();
    (
        args,
        vec![("SQUEUE_FORMAT", format!("{SQUEUE_FORMAT}{end}"))],
    )
}

/// A mark nobody can guess, fresh for each use (the end of one listing's
/// lines, [`squeue_call`]; a file's name nobody can take first): 128
/// random bits, in hex.
pub fn fresh_mark() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow::anyhow!("no random bytes for a fresh mark: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The output of `squeue` [`squeue_call`]`(end)` as [`parse_squeue`]
/// reads it: one line per job, each ending where `|end` and a newline
/// end it, its comment's own newlines made spaces (the job stays the one
/// SLURM listed, whatever its comment holds); whatever follows the last
/// such end (a listing cut short) is left out.
pub fn squeue_lines(out: &str, end: &str) -> String {
    let end = format!("|{end}\n");
    let mut records: Vec<&str> = out.split(end.as_str()).collect();
    // What follows the last end: empty for a whole listing.
    records.pop();
    let mut lines = String::new();
    for r in records {
        lines.push_str(&r.replace(['\n', '\r'], " "));
        lines.push('\n');
    }
    lines
}

/// A SLURM job, or one element of a job array (`812_3`): what `scancel`
/// and `scancel --batch` take, and what `why` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId {
    /// The job's id (an array's own id for its elements).
    pub job: u64,
    /// The element's index in its array.
    pub index: Option<u32>,
}

impl JobId {
    /// A job of its own (not an array's element).
    pub fn one(job: u64) -> JobId {
        JobId { job, index: None }
    }

    /// `812` or `812_3`, as squeue's `%i` prints it; `None` for anything
    /// else (a range of pending elements, `812_[4-9]`).
    pub fn parse(s: &str) -> Option<JobId> {
        let s = s.trim();
        match s.split_once('_') {
            None => Some(JobId::one(s.parse().ok()?)),
            Some((job, index)) => Some(JobId {
                job: job.parse().ok()?,
                index: Some(index.parse().ok()?),
            }),
        }
    }
}

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            None => write!(f, "{}", self.job),
            Some(i) => write!(f, "{}_{i}", self.job),
        }
    }
}

pub use super::ask::{JobAsk, sbatch_args, time_limit};
pub use super::nodes::{SINFO_GPUS, on_node, parse_nodes, parse_totals};

/// The comment that marks run `run` of the daemon tagged `tag`; found again
/// after a restart by [`parse_squeue`].
pub fn comment(tag: &str, run: i64) -> String {
    format!("{tag}:run:{run}")
}

/// The comment that marks the job array of batch `batch` (the first of
/// its runs) of the daemon tagged `tag`; its element `i` is the batch's
/// `i`th run (the batch's index file, `batch.rs`).
pub fn batch_comment(tag: &str, batch: i64) -> String {
    format!("{tag}:batch:{batch}")
}

/// What a comment of the daemon tagged `tag` marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// One run's job.
    Run(i64),
    /// A batch's job array.
    Batch(i64),
}

/// What a comment marks, when it is one of the daemon tagged `tag`.
pub fn mark_of(tag: &str, comment: &str) -> Option<Mark> {
    let rest = comment.strip_prefix(tag)?;
    if let Some(run) = rest.strip_prefix(":run:") {
        return run.parse().ok().map(Mark::Run);
    }
    rest.strip_prefix(":batch:")?.parse().ok().map(Mark::Batch)
}

/// The job id `sbatch --parsable` printed (`123` or `123;cluster`).
pub fn parse_job_id(stdout: &str) -> Option<u64> {
    stdout.trim().split(';').next()?.trim().parse().ok()
}

/// Whether an sbatch failure `said` is SLURM not answering (try again
/// later) rather than refusing the job (an error of the task's or the
/// config's: the run fails with SLURM's words).
pub fn transient(said: &str) -> bool {
    [
        "Unable to contact slurm controller",
        "Socket timed out",
        "temporarily unable",
        "Zero Bytes were transmitted",
        "Connection refused",
        "took over",
        "cannot run `",
    ]
    .iter()
    .any(|m| said.contains(m))
}

/// One of this daemon's jobs (or job array elements) as `squeue` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The run its comment names (with its index, for an array's element).
    pub run: i64,
    /// The job id (an array's own id for its elements).
    pub job: u64,
    /// The element's index, for an element of a job array.
    pub index: Option<u32>,
    /// `PENDING`, `RUNNING`, `COMPLETED`, ...
    pub state: String,
    /// SLURM's reason (`Resources`, `Priority`, `None`).
    pub reason: String,
    /// The nodes it runs on (empty while it waits).
    pub nodes: String,
}

impl Listed {
    /// The job, or the array's element, as scancel takes it.
    pub fn id(&self) -> JobId {
        JobId {
            job: self.job,
            index: self.index,
        }
    }

    /// Whether the job is over (SLURM keeps ended jobs for `MinJobAge`).
    pub fn ended(&self) -> bool {
        ended(&self.state)
    }
}

/// Whether a job in `state` ended because its node failed (not the task's
/// doing, and not a cancel, whatever its supervisor recorded).
pub fn node_failed(state: &str) -> bool {
    matches!(state, "NODE_FAIL" | "BOOT_FAIL")
}

/// Whether a job in `state` waits for SLURM to start it.
pub fn waiting(state: &str) -> bool {
    matches!(
        state,
        "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "CONFIGURING"
    )
}

/// Whether a job in `state` is over.
pub fn ended(state: &str) -> bool {
    matches!(
        state,
        "COMPLETED"
            | "FAILED"
            | "CANCELLED"
            | "TIMEOUT"
            | "NODE_FAIL"
            | "PREEMPTED"
            | "OUT_OF_MEMORY"
            | "BOOT_FAIL"
            | "DEADLINE"
            | "REVOKED"
            | "SPECIAL_EXIT"
    )
}

/// This daemon's jobs in `squeue` [`squeue_call`] output ([`squeue_lines`]): those whose
/// comment bears its `tag` and whose user `may_own(run, uid)` (the
/// daemon's, or the run's owner's), and those it `known`s by their id
/// (whatever their comment now says). Other lines (other daemons', and
/// other users' jobs whatever their comment says: anyone can copy a
/// comment) are skipped. An element of a batch's job array is its run by
/// `element(batch, index)` (none: a batch this daemon does not know, or
/// an index past its runs: skipped). Where a run has more than one job,
/// the newest (highest id) is kept.
pub fn parse_squeue(
    out: &str,
    tag: &str,
    may_own: &dyn Fn(i64, u32) -> bool,
    known: &dyn Fn(JobId) -> Option<i64>,
    element: &dyn Fn(i64, u32) -> Option<i64>,
) -> Vec<Listed> {
    let mut jobs: std::collections::BTreeMap<i64, Listed> = Default::default();
    for line in out.lines() {
        let mut f = line.splitn(6, '|');
        let (Some(id), Some(state), Some(reason), Some(nodes), Some(user), Some(comment)) =
            (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let Ok(uid) = user.trim().parse::<u32>() else {
            continue;
        };
        let Some(id) = JobId::parse(id) else {
            continue;
        };
        // A job the daemon knows by its id stays its run's whatever its
        // comment now says (its owner may change it: `scontrol update`).
        let run = match (known(id), mark_of(tag, comment.trim()), id.index) {
            (Some(run), _, _) => run,
            (None, Some(Mark::Run(run)), None) => run,
            (None, Some(Mark::Batch(batch)), Some(index)) => match element(batch, index) {
                Some(run) => run,
                None => continue,
            },
            _ => continue,
        };
        if !may_own(run, uid) {
            continue;
        }
        let listed = Listed {
            run,
            job: id.job,
            index: id.index,
            state: state.trim().to_string(),
            reason: reason.trim().to_string(),
            nodes: nodes.trim().to_string(),
        };
        match jobs.get(&run) {
            Some(old) if old.id() > id => {}
            _ => {
                jobs.insert(run, listed);
            }
        }
    }
    jobs.into_values().collect()
}

/// What a job's end means for its run whose supervisor left `out`, where
/// nightjar did not ask it to stop: SLURM's class where SLURM ended it
/// itself (its time limit, a preemption, its memory limit), whose signal
/// the supervisor saw as any other (`killed by signal 15`); `out` else.
pub fn ended_by_slurm(job: JobId, state: &str, reason: &str, out: RunOutcome) -> RunOutcome {
    if !matches!(state, "TIMEOUT" | "PREEMPTED" | "OUT_OF_MEMORY") || out.class == RunClass::Ok {
        return out;
    }
    let slurm = unreported_end(job, Some(state), reason, false, None, out.finished_at);
    RunOutcome {
        message: match (slurm.message, out.message) {
            (Some(s), Some(m)) => Some(format!("{s}; its supervisor: {m}")),
            (s, m) => s.or(m),
        },
        exit_code: out.exit_code,
        signal: out.signal,
        ..slurm
    }
}

/// What a job's end means for its run when its supervisor left no status:
/// `state` and `reason` as SLURM gives them (`None`: SLURM no longer knows
/// the job), `asked`: whether nightjar itself asked it to stop, `by`: who
/// cancelled it, where SLURM's accounting says (`acct.rs`).
pub fn unreported_end(
    job: JobId,
    state: Option<&str>,
    reason: &str,
    asked: bool,
    by: Option<u32>,
    at: i64,
) -> RunOutcome {
    let said = match state {
        Some(s) if reason.is_empty() || reason == "None" => format!("SLURM job {job} ended {s}"),
        Some(s) => format!("SLURM job {job} ended {s} ({reason})"),
        None => format!("SLURM job {job} is no longer known to SLURM"),
    };
    let (class, message) = match state {
        Some("CANCELLED") if asked => (
            RunClass::Cancelled,
            format!("{said}: cancelled before its supervisor started"),
        ),
        Some("CANCELLED") => (
            RunClass::Cancelled,
            format!(
                "{said}: cancelled outside nightjar {}",
                super::acct::cancelled_by(by)
            ),
        ),
        Some("TIMEOUT") => (
            RunClass::Timeout,
            format!("{said}: SLURM's time limit ended it"),
        ),
        Some("OUT_OF_MEMORY") => (
            RunClass::HostOom,
            format!("{said}: it ran out of its memory"),
        ),
        Some("PREEMPTED") => (RunClass::Preempted, format!("{said}: SLURM preempted it")),
        Some(s) if node_failed(s) => (
            RunClass::Lost,
            format!("{said}: its node failed under it; retried per the task's retry settings"),
        ),
        _ => (
            RunClass::Lost,
            format!(
                "{said} without a status from nightjar's supervisor (a node failure, or the batch step could not start nightjar-supervise: see slurm.out in the run folder); retried per the task's retry settings"
            ),
        ),
    };
    RunOutcome {
        class,
        exit_code: None,
        signal: None,
        finished_at: at,
        message: Some(message),
    }
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "squeue_tests.rs"]
mod squeue_tests;
