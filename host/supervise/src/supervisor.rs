//! The per-run supervisor: `nightjar-supervise RUN_DIR` (or `nightjar
//! supervise RUN_DIR`). It outlives the daemon (own session), holds the run's
//! lock for as long as it lives, runs the task in its own process group (and
//! cgroup where available), enforces the timeout with SIGTERM -> grace ->
//! SIGKILL of the whole tree, treats its own SIGTERM as a cancel request and
//! its SIGUSR1 as a preemption (the task's own signal and grace), and
//! reports the status when everything in the tree is gone (see [`super::files`]).

use std::fs::File;
use std::io::{BufRead, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::logs::CappedLog;
use crate::cgroup;
use crate::files::{self, EndedBy, RunSpec, RunStatus};
use crate::sys::{self, Exit};
use crate::time::now_ms;

#[path = "tree.rs"]
mod tree;
use tree::{Held, Tree};

/// The line of stdin a supervisor reads its spec from: the first, or
/// `SPEC_LINE` (0 is the first). `None`: not a line number.
pub fn spec_line(arg: Option<&std::ffi::OsStr>) -> Option<usize> {
    match arg {
        None => Some(0),
        Some(a) => a.to_str()?.parse().ok(),
    }
}

/// Runs the supervisor for the run folder `dir` (its spec arrives on stdin,
/// on line `line`: a SLURM job array's elements read theirs from the
/// batch's one file of specs); returns when the run is recorded. Errors
/// also go to `supervisor.log`.
pub fn main(dir: &Path, line: usize) -> Result<()> {
    // The task enters its workdir from here: not from the folder the daemon
    // was started in, which /proc/self/cwd would reach past the
    // permissions of the folders above it.
    let dir = &std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let _ = std::env::set_current_dir("/");
    let result = run(dir, line);
    if let Err(e) = &result {
        note(dir, &format!("supervisor failed: {e:#}"));
    }
    result
}

fn run(dir: &Path, at: usize) -> Result<()> {
    // Only stdin, stdout and stderr come from the daemon; anything else it
    // might have leaked (a socket, the database) is closed before we read.
    sys::close_fds_from(3);
    sys::ignore_signal(libc::SIGPIPE);
    sys::ignore_signal(libc::SIGHUP);
    // SIGUSR1 from the daemon: a preemption of a task that saves checkpoints.
    let set = sys::sigset(&[libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGUSR1]);
    sys::block_signals(&set).context("block signals")?;
    let sigfd = sys::signalfd(&set).context("signalfd")?;
    // Our own session: the daemon's terminal or process group no longer
    // reaches us (fails only if we already lead a group, e.g. run by hand).
    // SAFETY: setsid has no memory effects.
    unsafe {
        libc::setsid();
    }
    // A file on stdin (a SLURM job's spec, a job array's specs) is no
    // daemon: nothing answers the status reported, and a job array's next
    // line is another element's spec, never read as an answer.
    let from_file = super::report::stdin_is_file();
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    for n in 0..=at {
        line.clear();
        if stdin
            .read_line(&mut line)
            .context("read the run spec from stdin")?
            == 0
        {
            anyhow::bail!("no run spec on line {n} of stdin (line {at} wanted)");
        }
    }
    let mut spec: RunSpec = serde_json::from_str(&line).context("parse the run spec")?;
    // Under a batch system: the GPUs it allocated on this node.
    spec.take_from_job(|name| std::env::var(name).ok());
    let _lock = match take_lock(&spec) {
        Ok(lock) => lock,
        Err(e) => {
            // Another process holds this run's byte: never start the task,
            // and tell a listening daemon why (without the lock, no status.json).
            let status = RunStatus {
                started_at: 0,
                finished_at: now_ms(),
                exit_code: None,
                signal: None,
                ended_by: EndedBy::SpawnFailed,
                message: Some(format!(
                    "not started: {e:#}: another process holds this run's byte in runs.lock (a task of the same user can; see the book's \"How a run is kept safe\")"
                )),
                log_dropped: 0,
                log_error: None,
                detected: None,
            };
            super::report::report(&status, &mut super::report::answers(&mut stdin, from_file));
            return Ok(());
        }
    };
    if dir.join(files::STATUS).exists() {
        // Declared lost (or already finished) before we got here: never run twice.
        return Ok(());
    }
    if let Some(m) = &spec.manifest {
        let name = nightjar_core::api::manifest::FILE;
        if let Err(e) = files::write_text_atomic(dir, name, m) {
            note(dir, &format!("cannot write {name}: {e}"));
        }
    }
    sys::set_child_subreaper().context("become child subreaper")?;
    let status = supervise(dir, &spec, &sigfd);
    super::report::keep(
        dir,
        &status,
        &mut super::report::answers(&mut stdin, from_file),
    );
    Ok(())
}

/// Takes the run's lock, held until we exit.
fn take_lock(spec: &RunSpec) -> Result<File> {
    super::lock::try_lock(&spec.lock_file, spec.run_id)?
        .with_context(|| format!("run {} is locked by another supervisor", spec.run_id))
}

fn supervise(dir: &Path, spec: &RunSpec, sigfd: &OwnedFd) -> RunStatus {
    let started_at = now_ms();
    let mut status = RunStatus {
        started_at,
        finished_at: started_at,
        exit_code: None,
        signal: None,
        ended_by: EndedBy::SpawnFailed,
        message: None,
        log_dropped: 0,
        log_error: None,
        detected: None,
    };
    let cgroup = spec
        .cgroup
        .as_ref()
        .and_then(|cg| match cgroup::prepare(cg, spec.mem_limit) {
            Ok(warning) => {
                if let Some(w) = warning {
                    note(dir, &w);
                }
                Some(cg.clone())
            }
            Err(e) => {
                note(
                    dir,
                    &format!(
                        "cgroup {} unavailable, using the process group only: {e}",
                        cg.display()
                    ),
                );
                None
            }
        });
    // Made by the task's owner when it runs as another user: their folder,
    // and refused where they may not write (still one thread: no readers yet).
    let make = |out: &Path| match &spec.run_as {
        Some(r) => super::identity::as_user(r, || {
            super::paths::make_output(out, &spec.output_roots, spec.umask)
        })
        .and_then(|made| made.map_err(|e| format!("{e} (as user {})", r.name))),
        None => super::paths::make_output(out, &spec.output_roots, spec.umask),
    };
    if let Some(out) = &spec.output
        && let Err(e) = make(out)
    {
        status.message = Some(e);
        status.finished_at = now_ms();
        if let Some(cg) = &cgroup {
            let _ = std::fs::remove_dir(cg);
        }
        return status;
    }
    let logs = [
        CappedLog::new(&dir.join(files::STDOUT), spec.log_cap),
        CappedLog::new(&dir.join(files::STDERR), spec.log_cap),
    ];
    // From here on the run counts as an attempt (a supervisor gone before
    // this line gives it back: `store/give_back.rs`).
    if let Err(e) = files::mark_started(dir) {
        note(dir, &format!("cannot mark the run started: {e}"));
    }
    let (child_pid, readers) = match super::spawn::spawn(spec, cgroup.as_deref(), logs) {
        Ok(x) => x,
        Err(e) => {
            status.message = Some(e);
            status.finished_at = now_ms();
            if let Some(cg) = &cgroup {
                let _ = std::fs::remove_dir(cg);
            }
            return status;
        }
    };
    let tree = Tree {
        pgid: child_pid,
        cgroup,
        container: spec.container.as_ref().map(|control| Held {
            spec,
            control,
            dir,
            sent: Default::default(),
        }),
    };
    let start = Instant::now();
    // A timeout too far ahead for the clock (centuries) never fires.
    let deadline = spec
        .timeout_ms
        .and_then(|t| start.checked_add(Duration::from_millis(t)));
    let grace = Duration::from_millis(spec.grace_ms);
    let mut ended_by = EndedBy::Exited;
    let mut kill_at: Option<Instant> = None;
    let mut main_exit: Option<Exit> = None;
    let mut cancel = false;
    let mut preempt = false;
    loop {
        for sig in sys::read_signals(sigfd) {
            cancel |= sig == libc::SIGTERM || sig == libc::SIGINT;
            preempt |= sig == libc::SIGUSR1;
        }
        while let Some((pid, exit)) = sys::reap_any() {
            if pid == child_pid {
                main_exit = Some(exit);
            }
        }
        let now = Instant::now();
        let stop = |why: EndedBy,
                    (sig, grace): (i32, Duration),
                    ended_by: &mut EndedBy,
                    kill_at: &mut Option<Instant>| {
            if kill_at.is_none() {
                if *ended_by == EndedBy::Exited && main_exit.is_none() {
                    *ended_by = why;
                }
                tree.signal(sig);
                *kill_at = Some(now + grace);
            }
        };
        let terminate = |why, ended_by: &mut EndedBy, kill_at: &mut Option<Instant>| {
            stop(why, (libc::SIGTERM, grace), ended_by, kill_at)
        };
        // A preemption is a stop the store tells from a cancel; a task that
        // saves checkpoints gets its own signal and time to save first.
        if preempt {
            let how = (
                spec.preempt_signal.unwrap_or(libc::SIGTERM),
                spec.preempt_grace_ms.map_or(grace, Duration::from_millis),
            );
            stop(EndedBy::Cancelled, how, &mut ended_by, &mut kill_at);
        }
        if cancel {
            terminate(EndedBy::Cancelled, &mut ended_by, &mut kill_at);
        }
        if main_exit.is_none() && deadline.is_some_and(|d| now >= d) {
            terminate(EndedBy::Timeout, &mut ended_by, &mut kill_at);
        }
        if main_exit.is_some() {
            if !tree.alive() {
                break;
            }
            // Leftovers of a finished task get the same TERM -> grace -> KILL.
            terminate(EndedBy::Exited, &mut ended_by, &mut kill_at);
        }
        if kill_at.is_some_and(|k| now >= k) {
            tree.signal(libc::SIGKILL);
        }
        let wake = [deadline.filter(|_| main_exit.is_none()), kill_at]
            .into_iter()
            .flatten()
            .map(|t| poll_ms(t.saturating_duration_since(now)))
            .min()
            .unwrap_or(-1);
        // Leftovers are checked at least every 100 ms (they are not our children).
        let wake = if main_exit.is_some() {
            wake.clamp(1, 100)
        } else {
            wake
        };
        let _ = sys::poll_readable(sigfd, wake);
    }
    for r in readers {
        if let Ok((dropped, error)) = r.join() {
            status.log_dropped += dropped;
            status.log_error = status.log_error.or(error);
        }
    }
    if let Some(c) = &tree.container {
        c.remove();
    }
    let oom_kills = tree
        .cgroup
        .as_deref()
        .map(super::classify::oom_kills)
        .unwrap_or(0);
    if let Some(cg) = &tree.cgroup {
        // Usually empty by now; if the kernel is still tearing it down, the
        // daemon removes it after the supervisor exits.
        let _ = std::fs::remove_dir(cg);
    }
    status.finished_at = now_ms();
    status.ended_by = ended_by;
    match main_exit {
        Some(Exit::Code(c)) => status.exit_code = Some(c),
        Some(Exit::Signal(s)) => status.signal = Some(s),
        None => {}
    }
    status.message = match ended_by {
        EndedBy::Timeout => Some(format!(
            "killed after its timeout of {}",
            humantime::format_duration(Duration::from_millis(spec.timeout_ms.unwrap_or(0)))
        )),
        _ => None,
    };
    if ended_by == EndedBy::Exited {
        let paths = (spec.workdir.as_path(), spec.output.as_deref());
        status.detected = super::classify::of_run(dir, &spec.classes, paths, &status, oom_kills);
    }
    status
}

/// The poll timeout for a wait of `d`: at least 1 ms, at most `i32::MAX`
/// (about 24.8 days; a longer wait wakes, finds nothing due, and polls again).
fn poll_ms(d: Duration) -> i32 {
    i32::try_from(d.as_millis().saturating_add(1)).unwrap_or(i32::MAX)
}

/// Appends `msg` to the run's supervisor log (nothing when it cannot).
fn note(dir: &Path, msg: &str) {
    let _ = std::fs::create_dir_all(dir);
    if let Ok(mut f) = File::options()
        .create(true)
        .append(true)
        .open(dir.join(files::SUPERVISOR_LOG))
    {
        let _ = writeln!(f, "{msg}");
    }
}

#[cfg(test)]
#[path = "supervisor_tests.rs"]
mod tests;
