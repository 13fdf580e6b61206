//! What the end of each of this daemon's jobs means for its run: the
//! supervisor's status where it left one (bounded by what the polls saw,
//! for a job that is its owner's; corrected where SLURM ended the job
//! itself or someone cancelled it outside nightjar); else, once the job
//! stayed ended without a status for [`PATIENCE`] polls, what SLURM says:
//! `squeue`'s state while it lists the job, its accounting's (`acct.rs`)
//! once it does not. Two steps, so that `sacct` runs with no lock held:
//! [`over`] under the jobs' lock, [`judge`] after it.

use std::collections::HashMap;

use super::Job;
use super::acct::{self, Accounted};
use super::cli::{self, JobId, Listed};
use super::folder::status_in;
use crate::store::{RunClass, RunOutcome};

/// Polls that must find a job ended with no status before its run is
/// recorded from what SLURM says (a shared folder's cache can be late).
pub(super) const PATIENCE: u32 = 2;

/// How long (ms) a job's end waits for SLURM's accounting to have it
/// ended too before it is recorded without accounting's word: slurmctld
/// tells slurmdbd a moment after `squeue` shows the end (0.1 s for a job
/// of its own on the test cluster, up to 2.6 s for a job array's element,
/// whose record appears only then).
pub(super) const ACCOUNTING_WAIT_MS: i64 = 10_000;

/// A run whose job is over, before SLURM's accounting is read for it.
#[derive(Debug)]
pub(super) struct Over {
    /// The run.
    pub run: i64,
    /// Its job (or array element).
    pub id: JobId,
    /// Whether nightjar asked it to stop.
    pub asked: bool,
    /// SLURM's last reason for it.
    pub reason: String,
    /// The job as this poll's `squeue` listed it (`None`: not listed).
    pub seen: Option<Listed>,
    /// What its supervisor reported, if it did.
    pub status: Option<RunOutcome>,
    /// Since when (ms) it waits for accounting to have its end, if it does.
    pub waiting_since: Option<i64>,
}

impl Over {
    /// Whether what to record needs SLURM's accounting: an end without a
    /// status, or a cancel outside nightjar (who did it).
    fn needs_accounting(&self) -> bool {
        match &self.seen {
            None => true,
            Some(l) => self.status.is_none() || (!self.asked && l.state == "CANCELLED"),
        }
    }
}

/// Updates each job from `listed` (this poll's `squeue`); the runs whose
/// jobs are over, `me` being the daemon's user.
pub(super) fn over(
    jobs: &mut HashMap<i64, Job>,
    listed: &[Listed],
    now: i64,
    me: u32,
) -> Vec<Over> {
    let by_run: HashMap<i64, &Listed> = listed.iter().map(|l| (l.run, l)).collect();
    let mut over = Vec::new();
    for (&run, j) in jobs.iter_mut() {
        let seen = by_run.get(&run).copied().filter(|l| l.id() >= j.id);
        if let Some(l) = seen {
            if l.state == "RUNNING" {
                j.running = Some((j.running.map_or(now, |r| r.0), now));
            }
            j.id = l.id();
            j.state.clone_from(&l.state);
            j.reason.clone_from(&l.reason);
            j.nodes.clone_from(&l.nodes);
            if !l.ended() {
                // A listing taken before its sbatch returned missed it:
                // its end still gets the whole patience.
                j.unreported = 0;
                continue;
            }
        }
        let status = status_in(&j.dir).map(|mut out| {
            if j.owner != me {
                // The owner's word: not before a poll found it running,
                // nor after this one.
                let last = j.running.map_or(i64::MIN, |r| r.1);
                out.finished_at = out.finished_at.max(last).min(now);
            }
            out
        });
        if status.is_none() {
            j.unreported += 1;
            if j.unreported < PATIENCE {
                continue;
            }
        }
        over.push(Over {
            run,
            id: j.id,
            asked: j.asked,
            reason: j.reason.clone(),
            seen: seen.cloned(),
            status,
            waiting_since: j.accounting_since,
        });
    }
    over
}

/// What [`judge`] made of the runs over.
#[derive(Debug, Default)]
pub(super) struct Judged {
    /// The runs to record as ended, and how.
    pub ended: Vec<(i64, RunOutcome)>,
    /// The runs whose end SLURM's accounting does not have yet: judged
    /// again at the next poll (their jobs' `accounting_since` set).
    pub later: Vec<i64>,
}

/// What to record for each run in `over`, asking SLURM's `accounting` (one
/// call for all that need it; `None`: the cluster keeps none, or it did
/// not answer) at `now`.
pub(super) fn judge(
    over: Vec<Over>,
    now: i64,
    accounting: &dyn Fn(&[JobId]) -> acct::Said,
) -> Judged {
    let ask: Vec<JobId> = (over.iter())
        .filter(|o| o.needs_accounting())
        .map(|o| o.id)
        .collect();
    let said = match ask.is_empty() {
        true => None,
        false => accounting(&ask),
    };
    let mut judged = Judged::default();
    for o in over {
        let acct = said.as_ref().and_then(|s| s.get(&o.id));
        // Accounting answers but has not the job's end yet: a poll or two.
        let lagging = said.is_some() && o.needs_accounting() && !acct.is_some_and(|a| a.ended());
        // Waited from the first poll that found it so (a wall clock set
        // back since then ends the wait: it would hold the end as long).
        let waited = now - o.waiting_since.unwrap_or(now);
        if lagging && (0..ACCOUNTING_WAIT_MS).contains(&waited) {
            judged.later.push(o.run);
            continue;
        }
        judged.ended.push((o.run, outcome(o, acct, now)));
    }
    judged
}

/// What to record for `o`, with what accounting has of its job.
fn outcome(o: Over, acct: Option<&Accounted>, now: i64) -> RunOutcome {
    let Some(mut out) = o.status else {
        return unreported(o.id, o.seen.as_ref(), &o.reason, o.asked, acct, now);
    };
    // SLURM's word on the job: squeue's, else (gone from it) accounting's.
    let (state, reason) = match (&o.seen, acct.filter(|a| a.ended())) {
        (Some(l), _) => (l.state.as_str(), l.reason.as_str()),
        (None, Some(a)) => (a.state.as_str(), a.reason.as_str()),
        (None, None) => return out,
    };
    if cli::node_failed(state) {
        // SLURM's SIGTERM reached the supervisor as a cancel: the node
        // failed under it, which is a lost run.
        return cli::unreported_end(o.id, Some(state), reason, false, None, out.finished_at);
    }
    if o.asked {
        return out;
    }
    if state == "CANCELLED" {
        let by = format!(
            "SLURM job {} was cancelled outside nightjar {}",
            o.id,
            acct::cancelled_by(acct.and_then(|a| a.by))
        );
        out.message = Some(match out.message {
            Some(m) => format!("{m}; {by}"),
            None => by,
        });
        // SLURM's SIGTERM reached the task's shell, whose exit (143) is
        // no failure of the task's own.
        if out.class != RunClass::Ok {
            out.class = RunClass::Cancelled;
        }
    }
    cli::ended_by_slurm(o.id, state, reason, out)
}

/// A run's end from SLURM's word alone (its supervisor left no status):
/// `squeue`'s state while it lists the job (`seen`), else its accounting's
/// (`acct`, its end time too); neither: the job is gone from SLURM.
pub(super) fn unreported(
    id: JobId,
    seen: Option<&Listed>,
    reason: &str,
    asked: bool,
    acct: Option<&Accounted>,
    now: i64,
) -> RunOutcome {
    let ended = acct.filter(|a| a.ended());
    let (state, reason, at) = match (seen, ended) {
        (Some(l), _) => (Some(l.state.as_str()), l.reason.as_str(), now),
        (None, Some(a)) => (
            Some(a.state.as_str()),
            a.reason.as_str(),
            a.end_ms.filter(|&e| e <= now).unwrap_or(now),
        ),
        (None, None) => (None, reason, now),
    };
    let mut out = cli::unreported_end(id, state, reason, asked, acct.and_then(|a| a.by), at);
    if let Some(a) = ended.filter(|_| out.class == RunClass::Lost) {
        let step = format!(
            "its batch step ended with {} (SLURM's accounting)",
            a.step_end()
        );
        out.message = Some(match out.message {
            Some(m) => format!("{m}; {step}"),
            None => step,
        });
    }
    out
}

#[cfg(test)]
#[path = "ends_tests.rs"]
mod tests;
