//! Watching this daemon's SLURM jobs: one `squeue` per poll for all of
//! them, each ended job's status read from its run folder and reported
//! once; and, at a daemon's start, what became of each run it had.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::folder::status_in;
use super::{Job, cli, cmd};
use crate::daemon::run::executor::Adopted;
use crate::daemon::state::{Daemon, lock};
use crate::sandbox::files;
use crate::store::{RunOutcome, RunRow};

/// Polls that must find a job ended with no status before its run is
/// recorded from what SLURM says (a shared folder's cache can be late).
const PATIENCE: u32 = 2;

/// The poller of one executor's jobs.
pub(super) struct Poller {
    pub daemon: Weak<Daemon>,
    pub jobs: Arc<Mutex<HashMap<i64, Job>>>,
    pub tag: String,
    pub every: Duration,
}

impl Poller {
    /// Polls until the daemon is gone.
    pub async fn run(self) {
        let mut failing = false;
        loop {
            tokio::time::sleep(self.every).await;
            let Some(daemon) = self.daemon.upgrade() else {
                return;
            };
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
                    cli::parse_squeue(&out, &self.tag)
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
            for (run, out) in self.ended(&listed, now) {
                let me = Arc::clone(&daemon);
                let reported = tokio::task::spawn_blocking(move || me.report_end(run, &out))
                    .await
                    .unwrap_or(false);
                if reported {
                    lock(&self.jobs).remove(&run);
                }
            }
        }
    }

    /// Updates each job from the listing; the runs whose jobs are over and
    /// what to record for them.
    fn ended(&self, listed: &[cli::Listed], now: i64) -> Vec<(i64, RunOutcome)> {
        let by_run: HashMap<i64, &cli::Listed> = listed.iter().map(|l| (l.run, l)).collect();
        let mut jobs = lock(&self.jobs);
        let mut over = Vec::new();
        for (&run, j) in jobs.iter_mut() {
            let seen = by_run.get(&run).filter(|l| l.job >= j.id);
            if let Some(l) = seen {
                j.id = l.job;
                j.state.clone_from(&l.state);
                j.reason.clone_from(&l.reason);
                j.nodes.clone_from(&l.nodes);
                if !l.ended() {
                    continue;
                }
            }
            if let Some(mut out) = status_in(&j.dir) {
                if let Some(l) = seen.filter(|l| cli::node_failed(&l.state)) {
                    // SLURM's SIGTERM reached the supervisor as a cancel:
                    // the node failed under it, which is a lost run.
                    out = cli::unreported_end(
                        l.job,
                        Some(&l.state),
                        &l.reason,
                        false,
                        out.finished_at,
                    );
                } else if let Some(l) = seen.filter(|l| l.state == "CANCELLED" && !j.asked) {
                    let by = format!(
                        "SLURM job {} was cancelled outside nightjar (scancel by a user or an administrator)",
                        l.job
                    );
                    out.message = Some(match out.message {
                        Some(m) => format!("{m}; {by}"),
                        None => by,
                    });
                }
                over.push((run, out));
                continue;
            }
            j.unreported += 1;
            if j.unreported >= PATIENCE {
                let state = seen.map(|l| l.state.as_str());
                over.push((
                    run,
                    cli::unreported_end(j.id, state, &j.reason, j.asked, now),
                ));
            }
        }
        over
    }
}

/// This daemon's jobs and the others, as `squeue` lists every job it keeps.
fn list() -> Result<String> {
    cmd::run("squeue", &["-h", "-t", "all", "-o", cli::SQUEUE_FORMAT])
}

/// The job SLURM has for run `run` of the daemon tagged `tag`, if any
/// (an sbatch that failed or was killed after it reached SLURM).
pub(super) fn find(tag: &str, run: i64) -> Option<u64> {
    let out = list().ok()?;
    cli::parse_squeue(&out, tag)
        .into_iter()
        .find(|l| l.run == run)
        .map(|l| l.job)
}

/// What became of `run` while no daemon watched it.
pub(super) fn adopt(tag: &str, run: &RunRow) -> Result<Adopted> {
    let comment = cli::comment(tag, run.id);
    let dir = Path::new(&run.run_dir);
    // An sbatch of the last daemon's may still be on its way: its job
    // would be found only once it returns.
    wait_for_sbatch(&comment);
    let out = list()?;
    let listed = cli::parse_squeue(&out, tag);
    let job = listed.iter().find(|l| l.run == run.id);
    let at = crate::time::now_ms();
    Ok(match job {
        Some(l) if !l.ended() => Adopted::Live(u32::try_from(l.job).unwrap_or(u32::MAX)),
        Some(l) => {
            Adopted::Ended(status_in(dir).unwrap_or_else(|| {
                cli::unreported_end(l.job, Some(&l.state), &l.reason, false, at)
            }))
        }
        None => match status_in(dir) {
            Some(out) => Adopted::Ended(out),
            // No job, none on its way, and its supervisor never began.
            None if !files::was_started(dir) => Adopted::NeverStarted,
            None => {
                let job = run.supervisor_pid.unwrap_or(0).max(0) as u64;
                Adopted::Ended(cli::unreported_end(job, None, "", false, at))
            }
        },
    })
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

/// Whether a process's argument list holds `arg`.
fn in_flight(arg: &str) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|p| {
        let is_pid = p
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        is_pid
            && std::fs::read(p.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == arg.as_bytes()))
    })
}
