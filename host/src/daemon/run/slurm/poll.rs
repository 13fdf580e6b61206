//! Watching this daemon's SLURM jobs: one `squeue` per poll for all of
//! them, each ended job's status read from its run folder and reported
//! once; and, at a daemon's start, what became of each run it had.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::cli::JobId;
use super::ends::{self, Over};
use super::folder::status_in;
use super::{Job, acct, cli, cmd};
use crate::daemon::run::executor::Adopted;
use crate::daemon::state::{Daemon, lock};
use crate::sandbox::files;
use crate::store::{RunOutcome, RunRow};

/// How often the batches folder is swept for folders no run needs any
/// more (those whose runs all ended while no daemon watched them, or were
/// given back): at the poller's first round, then hourly.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// The poller of one executor's jobs.
pub(super) struct Poller {
    pub daemon: Weak<Daemon>,
    pub jobs: Arc<Mutex<HashMap<i64, Job>>>,
    /// The runs of job array elements, by (batch, index).
    pub elements: Arc<Mutex<HashMap<(i64, u32), i64>>>,
    /// The running jobs' node samples (`live.rs`).
    pub lives: Arc<super::live::Lives>,
    /// The folder of job arrays' folders.
    pub batches: std::path::PathBuf,
    pub tag: String,
    pub every: Duration,
}

impl Poller {
    /// Polls until the daemon is gone.
    pub async fn run(self) {
        let mut failing = false;
        let mut swept: Option<Instant> = None;
        loop {
            tokio::time::sleep(self.every).await;
            let Some(daemon) = self.daemon.upgrade() else {
                return;
            };
            if swept.is_none_or(|t| t.elapsed() >= SWEEP_EVERY) {
                swept = Some(Instant::now());
                let (dir, elements) = (self.batches.clone(), Arc::clone(&self.elements));
                let _ = tokio::task::spawn_blocking(move || sweep(&dir, &elements)).await;
            }
            if lock(&self.jobs).is_empty() {
                continue;
            }
            let listing = tokio::task::spawn_blocking(list).await;
            let listed = match listing {
                Ok(Ok(out)) => {
                    if failing {
                        tracing::info!("squeue answers again");
                        failing = false;
                    }
                    let element = |b, i| lock(&self.elements).get(&(b, i)).copied();
                    let (owners, ids): (HashMap<i64, u32>, HashMap<JobId, i64>) = lock(&self.jobs)
                        .iter()
                        .map(|(r, j)| ((*r, j.owner), (j.id, *r)))
                        .unzip();
                    let known = |id| ids.get(&id).copied();
                    let may_own = |run, uid| {
                        owners
                            .get(&run)
                            .is_some_and(|&o| super::owner::may_own(uid, o))
                    };
                    cli::parse_squeue(&out, &self.tag, &may_own, &known, &element)
                }
                Ok(Err(e)) => {
                    if !failing {
                        tracing::warn!(
                            "cannot read SLURM's queue (runs keep going; retried every poll): {e:#}"
                        );
                        failing = true;
                    }
                    continue;
                }
                Err(_) => continue,
            };
            let now = daemon.now_ms();
            let began = self.began();
            if !began.is_empty() {
                let me = Arc::clone(&daemon);
                let _ = tokio::task::spawn_blocking(move || me.runs_began(&began, now)).await;
            }
            self.read_samples(&daemon, now).await;
            let over = ends::over(&mut lock(&self.jobs), &listed, now, crate::users::euid());
            let judged = match over.is_empty() {
                true => ends::Judged::default(),
                false => tokio::task::spawn_blocking(move || ends::judge(over, now, &acct::lookup))
                    .await
                    .unwrap_or_default(),
            };
            for run in judged.later {
                if let Some(j) = lock(&self.jobs).get_mut(&run) {
                    j.accounting_since.get_or_insert(now);
                }
            }
            let mut done = Vec::new();
            for (run, out) in judged.ended {
                let me = Arc::clone(&daemon);
                let reported = tokio::task::spawn_blocking(move || me.report_end(run, &out))
                    .await
                    .unwrap_or(false);
                if reported {
                    let job = lock(&self.jobs).remove(&run);
                    if let Some(j) = job
                        && let Some(e) = j.element
                    {
                        let batch = self.batches.join(e.0.to_string());
                        super::folder::keep_output(&batch, e.1, &j.dir);
                        super::folder::ended_without_status(&j.dir);
                        lock(&self.elements).remove(&e);
                        done.push(e.0);
                    }
                }
            }
            self.forget_batches(done);
        }
    }

    /// Reads the running jobs' node samples: their stall marks recorded.
    async fn read_samples(&self, daemon: &Arc<Daemon>, now: i64) {
        let running: Vec<(i64, std::path::PathBuf)> = (lock(&self.jobs).iter())
            .filter(|(_, j)| j.state == "RUNNING")
            .map(|(r, j)| (*r, j.dir.clone()))
            .collect();
        let lives = Arc::clone(&self.lives);
        let cfg = crate::daemon::watch::gpus::monitor_config(&daemon.cfg);
        let changes =
            tokio::task::spawn_blocking(move || super::live::read(&lives, &running, &cfg))
                .await
                .unwrap_or_default();
        if !changes.is_empty() {
            let me = Arc::clone(daemon);
            let _ = tokio::task::spawn_blocking(move || me.mark_stalled(&changes, now)).await;
        }
    }

    /// Removes the folders of the batches in `done` none of whose elements
    /// is in progress any more: none this daemon watches, and every run
    /// its index names has ended (a status in its folder, or no folder).
    /// The second check keeps the folder of a batch whose elements a
    /// restarted daemon has not all adopted yet: one still waiting in
    /// SLURM reads the index when it starts.
    fn forget_batches(&self, mut done: Vec<i64>) {
        done.sort_unstable();
        done.dedup();
        if done.is_empty() {
            return;
        }
        let folders = done
            .into_iter()
            .map(|b| (b, self.batches.join(b.to_string())))
            .collect();
        remove_ended(folders, &self.elements);
    }

    /// The runs whose tasks began on their node since the last poll, and
    /// when (the supervisor's `started` marker, which holds its clock's ms).
    fn began(&self) -> Vec<(i64, i64)> {
        let mut jobs = lock(&self.jobs);
        let mut began = Vec::new();
        for (&run, j) in jobs.iter_mut().filter(|(_, j)| !j.began) {
            // The run folder may be its task's owner's: a plain file, small.
            let Ok(text) = nightjar_core::plain_file::read(&j.dir.join(files::STARTED), 64) else {
                continue;
            };
            j.began = true;
            let now = crate::time::now_ms();
            if let Ok(at) = String::from_utf8_lossy(&text).trim().parse::<i64>() {
                // Not later than it was seen (a node's clock ahead, or an
                // owner's marker that says so), nor, for a job that is its
                // owner's (who can write the marker when they like), than
                // the first poll that found it running.
                let seen = match j.running {
                    Some((first, _)) if j.owner != crate::users::euid() => first,
                    _ => now,
                };
                began.push((run, at.min(seen)));
            }
        }
        began
    }
}

/// Removes the folders in `batches` of batches no element of which is in
/// progress (`elements`) and all of whose runs ended; how many.
pub(super) fn sweep(batches: &Path, elements: &Mutex<HashMap<(i64, u32), i64>>) -> usize {
    let Ok(dir) = std::fs::read_dir(batches) else {
        return 0;
    };
    // Listed before the batches in progress are read: a batch made after
    // the listing is not in it, and one made before it was known before
    // its folder was made (`batch.rs` registers its elements first).
    let listed: Vec<(i64, std::path::PathBuf)> = dir
        .flatten()
        .filter_map(|e| {
            let b = e.file_name().to_str()?.parse::<i64>().ok()?;
            Some((b, e.path()))
        })
        .collect();
    remove_ended(listed, elements)
}

/// Removes, of the batch folders `folders` (batch, folder), those of the
/// batches none of whose elements is in progress (`elements`, read now)
/// and all of whose runs ended; how many.
pub(super) fn remove_ended(
    folders: Vec<(i64, std::path::PathBuf)>,
    elements: &Mutex<HashMap<(i64, u32), i64>>,
) -> usize {
    let live: std::collections::HashSet<i64> = lock(elements).keys().map(|k| k.0).collect();
    let mut removed = 0;
    for (b, path) in folders {
        if live.contains(&b) || !super::folder::all_ended(&path) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed += 1,
            Err(e) => tracing::debug!("{}: not removed: {e}", path.display()),
        }
    }
    removed
}

/// This daemon's jobs and the others, as `squeue` lists every job it
/// keeps: one line each, whatever their comments hold.
fn list() -> Result<String> {
    let end = cli::fresh_mark()?;
    let (args, env) = cli::squeue_call(&end);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Ok(cli::squeue_lines(
        &cmd::run_with("squeue", &args, &env)?,
        &end,
    ))
}

/// The job SLURM has for run `run` (its folder `owner`'s) of the daemon
/// tagged `tag`, if any
/// (an sbatch that failed or was killed after it reached SLURM); for an
/// element of a job array (its run by `element`), the array's.
pub(super) fn find(
    tag: &str,
    run: i64,
    owner: u32,
    element: &dyn Fn(i64, u32) -> Option<i64>,
) -> Option<u64> {
    let out = list().ok()?;
    let may_own = |r, uid| r == run && super::owner::may_own(uid, owner);
    cli::parse_squeue(&out, tag, &may_own, &|_| None, element)
        .into_iter()
        .find(|l| l.run == run)
        .map(|l| l.job)
}

/// What became of `run` while no daemon watched it; `element`: the batch
/// and index of the job array element that runs it, when one does (its
/// run found by `runs`).
pub(super) fn adopt(
    tag: &str,
    run: &RunRow,
    element: Option<(i64, u32)>,
    runs: &dyn Fn(i64, u32) -> Option<i64>,
) -> Result<Adopted> {
    let comment = match element {
        Some((batch, _)) => cli::batch_comment(tag, batch),
        None => cli::comment(tag, run.id),
    };
    let dir = Path::new(&run.run_dir);
    // An sbatch of the last daemon's may still be on its way: its job
    // would be found only once it returns.
    wait_for_sbatch(&comment);
    let out = list()?;
    let owner = super::owner::owner_of(dir);
    let may_own = |r, uid| r == run.id && super::owner::may_own(uid, owner);
    // The job the last daemon recorded (its session), found by its id too.
    let recorded = JobId {
        job: run.supervisor_pid.unwrap_or(0).max(0) as u64,
        index: element.map(|e| e.1),
    };
    let known = |id: JobId| (recorded.job > 0 && id == recorded).then_some(run.id);
    let listed = cli::parse_squeue(&out, tag, &may_own, &known, runs);
    let job = listed.iter().find(|l| l.run == run.id);
    Ok(match job {
        Some(l) if !l.ended() => Adopted::Live(
            u32::try_from(l.job).unwrap_or(u32::MAX),
            Some(format!("SLURM job {}", l.id())),
        ),
        Some(l) => Adopted::Ended(judged(Over {
            run: run.id,
            id: l.id(),
            asked: false,
            reason: l.reason.clone(),
            seen: Some(l.clone()),
            status: status_in(dir),
            waiting_since: None,
        })),
        None => match status_in(dir) {
            // Gone from squeue (after `MinJobAge`): its supervisor's word,
            // and SLURM's accounting's on how the job ended.
            Some(out) => Adopted::Ended(judged(Over {
                run: run.id,
                id: recorded,
                asked: false,
                reason: String::new(),
                seen: None,
                status: Some(out),
                waiting_since: None,
            })),
            // No job, none on its way, and its supervisor never began.
            None if !files::was_started(dir) => {
                // An sbatch of the last daemon's may outlive the wait above
                // (sbatch retries a busy controller for minutes) and land
                // once the run is given back: its supervisor finds this
                // status and never starts the task.
                if dir.is_dir() {
                    super::folder::tombstone(
                        dir,
                        "the daemon stopped before its job was known to land",
                    );
                }
                Adopted::NeverStarted
            }
            // Gone from squeue (after `MinJobAge`): SLURM's accounting
            // may still say how it ended.
            None => Adopted::Ended(judged(Over {
                run: run.id,
                id: recorded,
                asked: false,
                reason: String::new(),
                seen: None,
                status: None,
                waiting_since: None,
            })),
        },
    })
}

/// What to record for a run found over at adoption.
fn judged(over: Over) -> RunOutcome {
    let now = crate::time::now_ms();
    // No later poll here: what accounting has now is its word.
    let waiting_since = Some(now - ends::ACCOUNTING_WAIT_MS);
    let over = Over {
        waiting_since,
        ..over
    };
    let mut judged = ends::judge(vec![over], now, &acct::lookup).ended;
    judged.pop().map_or_else(
        || cli::unreported_end(JobId::one(0), None, "", false, None, now),
        |(_, out)| out,
    )
}

/// Waits (at most the command limit and a little) while a process whose
/// arguments carry `--comment=<comment>` lives: an `sbatch` of this run.
fn wait_for_sbatch(comment: &str) {
    let want = format!("--comment={comment}");
    let t0 = Instant::now();
    while t0.elapsed() < cmd::LIMIT + Duration::from_secs(5) && in_flight(&want) {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether a process of the daemon's user has `arg` in its argument list
/// (another user's, which anyone can start with any arguments, would hold
/// the daemon's start back).
fn in_flight(arg: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    let me = crate::users::euid();
    procs.flatten().any(|p| {
        let is_pid = p
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        is_pid
            && std::fs::metadata(p.path()).is_ok_and(|m| m.uid() == me)
            && std::fs::read(p.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == arg.as_bytes()))
    })
}

#[cfg(test)]
#[path = "poll_tests.rs"]
mod tests;
