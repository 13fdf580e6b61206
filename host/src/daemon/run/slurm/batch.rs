//! Runs a round of starts released together: held by `launch`, submitted
//! by `flush`, those that ask alike as one job array (one `sbatch` for up
//! to `MaxArraySize` runs), a run that asks as no other as a job of its own.
//!
//! Exactly once, as for a job of its own: every run is claimed (on disk)
//! before the array's `sbatch`, and the batch's index, which finds each
//! run's element again (`index.rs`), is written before it too.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::cli::{self, JobId};
use super::{Job, SlurmExecutor, cmd, folder, owner, poll, script};
use crate::daemon::run::executor::{Launch, Started, TryLater};
use crate::daemon::state::{Daemon, lock};

/// A claimed run waiting for the round's `sbatch` (its folder made then).
pub(super) struct Held {
    pub run: Launch,
    pub started: Started,
}

/// What the elements of one job array must share: everything their
/// `sbatch` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Alike {
    gpus: u32,
    cpus: Option<u32>,
    mem: Option<u64>,
    time: Option<String>,
    /// The task's owner (a job array is one user's).
    owner: Option<u32>,
}

impl Alike {
    fn of(run: &Launch) -> Alike {
        let res = &run.resources;
        let grace = std::time::Duration::from_millis(run.spec.grace_ms);
        Alike {
            gpus: res.gpus,
            cpus: res.cpus.filter(|&c| c > 0),
            mem: res.mem.map(|m| m.as_u64()),
            time: res.timeout.map(|t| {
                cli::time_limit(
                    t.saturating_add(grace)
                        .saturating_add(std::time::Duration::from_secs(60)),
                )
            }),
            owner: run.spec.run_as.as_ref().map(|r| r.uid),
        }
    }
}

/// The largest job array the cluster takes (`MaxArraySize`: indexes
/// below it), read from `scontrol show config` once it answers; 1,000
/// until then.
fn max_array() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    if let Some(&max) = MAX.get() {
        return max;
    }
    match cmd::run("scontrol", &["show", "config"])
        .ok()
        .and_then(|out| parse_max_array(&out))
    {
        Some(max) => *MAX.get_or_init(|| max),
        None => 1000,
    }
}

/// `MaxArraySize` in `scontrol show config`'s output (at least 1).
pub(super) fn parse_max_array(out: &str) -> Option<usize> {
    out.lines().find_map(|l| {
        let (key, value) = l.split_once('=')?;
        (key.trim() == "MaxArraySize")
            .then(|| value.trim().parse::<usize>().ok())
            .flatten()
            .map(|n| n.max(1))
    })
}

/// The folder of batch `batch`.
fn dir_of(cfg: &crate::config::ExecutorConfig, batch: i64) -> std::path::PathBuf {
    cfg.shared_dir.join(super::BATCHES).join(batch.to_string())
}

/// `held` in groups that ask alike, each in the order held and at most
/// `max` long.
fn groups(held: Vec<Held>, max: usize) -> Vec<Vec<Held>> {
    let mut by: HashMap<Alike, usize> = HashMap::new();
    let mut out: Vec<Vec<Held>> = Vec::new();
    for h in held {
        let key = Alike::of(&h.run);
        match by.get(&key) {
            Some(&g) if out[g].len() < max => out[g].push(h),
            _ => {
                by.insert(key, out.len());
                out.push(vec![h]);
            }
        }
    }
    out
}

impl SlurmExecutor {
    /// Submits what `launch` held: each group that asks alike as one job
    /// array, a run alone as a job of its own.
    pub(super) fn submit_held(&self, daemon: &Arc<Daemon>) {
        let held = std::mem::take(&mut *lock(&self.held));
        if held.is_empty() {
            return;
        }
        // Every claim of the round on disk before any sbatch: one sync.
        if !daemon.durable() {
            for h in held {
                let why = TryLater("the database's log could not be flushed".into());
                daemon.launch_failed(h.run.run, anyhow::Error::new(why));
            }
            return;
        }
        // Each run's folder only now: one the database might not know
        // (its claim lost with the log) would stop the next start. A run
        // whose task was cancelled meanwhile is given back (its task ends
        // cancelled), not submitted.
        let held: Vec<Held> = held
            .into_iter()
            .filter(|h| {
                let asked = daemon.cancel_asked(h.run.run);
                // Given back with no start failure said: the store ends
                // the task cancelled, as a cancel of a queued task.
                if asked && !daemon.give_back(h.run.run) {
                    let run = h.run.run;
                    tracing::error!("run {run}: cannot give it back now; the next start does");
                }
                !asked
            })
            .filter_map(
                |mut h| match folder::prepare(self.sampler.as_ref(), &mut h.run) {
                    Ok(()) => Some(h),
                    Err(e) => {
                        daemon.launch_failed(h.run.run, e);
                        None
                    }
                },
            )
            .collect();
        for group in groups(held, max_array()) {
            // SLURM did not answer an sbatch of this round: the rest are
            // given back now, not each after sbatch's own time limit.
            if let Some(why) = self.down() {
                for h in group {
                    let why = anyhow::Error::new(TryLater(why.clone()));
                    daemon.launch_failed(h.run.run, why);
                }
                continue;
            }
            if group.len() == 1 {
                let Some(mut h) = group.into_iter().next() else {
                    continue;
                };
                match self.submit_one(&mut h.run) {
                    Ok(id) => self.submitted(daemon, h, id, None),
                    Err(e) => daemon.launch_failed(h.run.run, e),
                }
            } else {
                self.submit_array(daemon, group);
            }
        }
    }

    /// Why no job is submitted now (SLURM did not answer the last
    /// sbatch), if none is.
    pub(super) fn down(&self) -> Option<String> {
        let until = (*lock(&self.down_until))?;
        let left = until.saturating_duration_since(std::time::Instant::now());
        (!left.is_zero()).then(|| {
            format!(
                "SLURM did not answer the last sbatch; trying again in {}s",
                left.as_secs().max(1)
            )
        })
    }

    /// Records `h`'s job `id` (an array's element: its batch and index).
    fn submitted(&self, daemon: &Arc<Daemon>, h: Held, id: JobId, element: Option<(i64, u32)>) {
        lock(&self.jobs).insert(h.run.run, Job::new(id, h.run.dir.clone(), element));
        // The session is the job: recorded now, found by its comment should
        // the record be lost.
        (h.started)(
            u32::try_from(id.job).unwrap_or(u32::MAX),
            Some(format!("SLURM job {id}")),
        );
        self.start_poller(daemon);
    }

    /// One run as a job of its own: its job id, or why not.
    fn submit_one(&self, run: &mut Launch) -> Result<JobId> {
        let owner = owner::of(&self.cfg, run);
        if owner.is_some() {
            owner::check_enterable(&self.cfg.shared_dir)?;
            owner::take_over(run);
        }
        folder::write_spec(run)?;
        let script = script::run_script(&self.supervisor, self.sampler.as_ref(), run)?;
        if let Some(o) = owner {
            owner::hand_over(&run.dir, o)?;
        }
        let ask = self.ask(
            run,
            format!("nightjar-{}", run.spec.task_id),
            cli::comment(&self.tag, run.run),
            None,
            owner,
        );
        let args = cli::sbatch_args(&self.cfg, &ask, &script, &run.dir.join(folder::OUTPUT));
        let uid = owner.map_or_else(crate::users::euid, |o| o.0);
        self.sbatch(&args, &[run], || {
            poll::find(&self.tag, run.run, uid, &self.element())
        })
        .map(JobId::one)
    }

    /// `group` (at least two runs that ask alike) as one job array.
    fn submit_array(&self, daemon: &Arc<Daemon>, mut group: Vec<Held>) {
        let batch = group.iter().map(|h| h.run.run).min().unwrap_or(0);
        // One owner for the whole group (`Alike`).
        let owner = owner::of(&self.cfg, &group[0].run);
        let specs = dir_of(&self.cfg, batch).join(folder::SPECS);
        for (i, h) in group.iter_mut().enumerate() {
            h.run.spec.array_element = Some((batch, i as u32));
            // Each element locks its run's byte of the batch's specs.
            h.run.spec.lock_file = specs.clone();
            if owner.is_some() {
                owner::take_over(&mut h.run);
            }
        }
        let dir = dir_of(&self.cfg, batch);
        let runs: Vec<&Launch> = group.iter().map(|h| &h.run).collect();
        // Known before sbatch: a listing taken meanwhile names its elements.
        {
            let mut elements = lock(&self.elements);
            for (i, r) in runs.iter().enumerate() {
                elements.insert((batch, i as u32), r.run);
            }
        }
        let dirs: Vec<&std::path::Path> = runs.iter().map(|r| r.dir.as_path()).collect();
        let sampler = self.sampler.as_ref().filter(|_| runs[0].resources.gpus > 0);
        let enterable = match owner {
            Some(_) => owner::check_enterable(&self.cfg.shared_dir),
            None => Ok(()),
        };
        let submitted = enterable
            .and_then(|()| {
                runs.iter()
                    .try_for_each(|r| owner.map_or(Ok(()), |o| owner::hand_over(&r.dir, o)))
            })
            .and_then(|()| script::batch_script(&self.supervisor, sampler, &dir, batch, &dirs))
            .and_then(|script| {
                folder::write_specs(&dir, &runs)?;
                let ask = self.ask(
                    runs[0],
                    format!("nightjar-batch-{batch}"),
                    cli::batch_comment(&self.tag, batch),
                    Some(runs.len()),
                    owner,
                );
                let out = owner::array_output(&dir, owner)?.join("slurm-%a.out");
                let args = cli::sbatch_args(&self.cfg, &ask, &script, &out);
                let first = runs[0].run;
                let uid = owner.map_or_else(crate::users::euid, |o| o.0);
                self.sbatch(&args, &runs, || {
                    poll::find(&self.tag, first, uid, &self.element())
                })
            });
        match submitted {
            Ok(job) => {
                tracing::info!("SLURM job array {job}: batch {batch}, {} runs", group.len());
                for (i, h) in group.into_iter().enumerate() {
                    let index = i as u32;
                    let id = JobId {
                        job,
                        index: Some(index),
                    };
                    self.submitted(daemon, h, id, Some((batch, index)));
                }
            }
            Err(e) => {
                let mut elements = lock(&self.elements);
                for i in 0..group.len() {
                    elements.remove(&(batch, i as u32));
                }
                drop(elements);
                let why = format!("{e:#}");
                let try_later = e.downcast_ref::<TryLater>().is_some();
                // Refused for good, and no job of it found: no element will
                // ever read the batch's index, so its folder goes now (a
                // controller that did not answer may still land the job:
                // that folder stays for its elements, and goes with the
                // sweep once every run in it has a status).
                if !try_later
                    && let Err(e) = std::fs::remove_dir_all(&dir)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!("{}: not removed: {e}", dir.display());
                }
                for h in group {
                    let e = if try_later {
                        anyhow::Error::new(TryLater(why.clone()))
                    } else {
                        anyhow::anyhow!("{why}")
                    };
                    daemon.launch_failed(h.run.run, e);
                }
            }
        }
    }

    /// What `run`'s job (or the array it leads) asks SLURM for.
    fn ask(
        &self,
        run: &Launch,
        name: String,
        comment: String,
        array: Option<usize>,
        owner: Option<(u32, u32)>,
    ) -> cli::JobAsk {
        let res = &run.resources;
        cli::JobAsk {
            name,
            comment,
            array,
            gpus: res.gpus,
            cpus: res.cpus,
            mem: res.mem.map(|m| m.as_u64()),
            timeout: res.timeout,
            grace: std::time::Duration::from_millis(run.spec.grace_ms),
            owner,
        }
    }

    /// `sbatch args`: the job id it printed, or the one `find` finds (it may
    /// have reached SLURM before it failed or was killed). A controller that
    /// did not answer: a [`TryLater`], with a tombstone in each of `runs`'
    /// folders (should the job still land, an sbatch killed after its
    /// request left, its supervisors find it and never start the task),
    /// and no sbatch for a while.
    fn sbatch(
        &self,
        args: &[String],
        runs: &[&Launch],
        find: impl Fn() -> Option<u64>,
    ) -> Result<u64> {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let id = match cmd::run("sbatch", &args) {
            Ok(out) => cli::parse_job_id(&out)
                .with_context(|| format!("sbatch printed no job id: {out}"))?,
            Err(e) => match find() {
                Some(id) => id,
                None if cli::transient(&format!("{e:#}")) => {
                    for r in runs {
                        folder::tombstone(&r.dir, &format!("{e:#}"));
                    }
                    let wait = self.cfg.poll.max(super::BACKOFF);
                    *lock(&self.down_until) = Some(std::time::Instant::now() + wait);
                    return Err(anyhow::Error::new(TryLater(format!(
                        "SLURM did not take the job ({e:#}); tried again in {}s",
                        wait.as_secs()
                    ))));
                }
                None => return Err(e.context("SLURM refused the job")),
            },
        };
        *lock(&self.down_until) = None;
        Ok(id)
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
