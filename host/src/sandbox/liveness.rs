//! Whether anything of a run is alive. The run's lock says its supervisor
//! holds on, but a lock alone is no proof (another process of the same user
//! can take the byte), so a held lock counts only while the recorded
//! supervisor process is really there. And a run whose supervisor is gone is
//! not over while any process of its tree lives: its cgroup is not empty, or
//! (without cgroups) a process remains in the supervisor's session. Such an
//! orphaned tree (a task that killed its supervisor) is killed and the run is
//! recorded `killed` with the reason, so it is never run twice at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::files::{self, EndedBy, RunStatus};
use super::launch::Liveness;
use super::lock::try_lock;

/// What the daemon knows of one run.
#[derive(Debug, Clone)]
pub struct RunIds<'a> {
    /// Run id (its byte in `runs.lock`).
    pub run: i64,
    /// Its run folder.
    pub dir: &'a Path,
    /// Its supervisor's pid (= its session id), once it was started.
    pub supervisor: Option<i32>,
    /// Its cgroup, when runs get one.
    pub cgroup: Option<PathBuf>,
    /// Without cgroups: the daemon's pid, a child subreaper (the orphans of
    /// a supervisor that died become its children), and the supervisors it
    /// knows alive (its children that are no orphans).
    pub reaper: Option<(i32, Vec<i32>)>,
}

/// True when `pid` is a live supervisor of the run in `dir`.
pub fn is_supervisor(pid: i32, dir: &Path) -> bool {
    arguments(pid).is_some_and(|args| supervises(&args, dir))
}

/// The arguments of process `pid` (from `/proc/PID/cmdline`), or `None`
/// when it is gone.
pub fn arguments(pid: i32) -> Option<Vec<Vec<u8>>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let raw = raw.strip_suffix(&[0]).unwrap_or(&raw);
    Some(raw.split(|b| *b == 0).map(<[u8]>::to_vec).collect())
}

/// True when `args` are a supervisor's command for the run folder `dir`
/// exactly: `nightjar-supervise DIR` or `nightjard supervise DIR`, as
/// [`crate::sandbox::launch::SupervisorCmd`] starts them (the folder is
/// the last argument and is the whole of it: `runs/1` is not `runs/12`).
pub fn supervises(args: &[Vec<u8>], dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let program = |a: &[u8]| a.rsplit(|b| *b == b'/').next().unwrap_or(a).to_vec();
    let shape = match args {
        [p, d] if program(p) == b"nightjar-supervise" => Some(d),
        [_, verb, d] if verb == b"supervise" => Some(d),
        _ => None,
    };
    shape.is_some_and(|d| d.as_slice() == dir.as_os_str().as_bytes())
}

/// Every live (not zombie) process: (pid, parent, session).
fn processes() -> Vec<(i32, i32, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After "(comm)": state ppid pgrp session ...
            let rest = stat.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            if *f.first()? == "Z" {
                return None;
            }
            Some((pid, f.get(1)?.parse().ok()?, f.get(3)?.parse().ok()?))
        })
        .collect()
}

/// The live (not zombie) processes in session `sid`.
#[cfg(test)]
fn in_session(sid: i32) -> Vec<i32> {
    without_cgroup(sid, None)
}

/// A run's processes without a cgroup: those in its supervisor's session
/// `sid`, the orphans the daemon inherited from a dead supervisor, and every
/// descendant of either (a process that left the session with `setsid` is
/// still some run process's child, or, once orphaned, the daemon's).
fn without_cgroup(sid: i32, reaper: Option<&(i32, Vec<i32>)>) -> Vec<i32> {
    let procs = processes();
    let mut out: Vec<i32> = procs.iter().filter(|p| p.2 == sid).map(|p| p.0).collect();
    if let Some((me, live)) = reaper {
        out.extend(
            procs
                .iter()
                .filter(|p| p.1 == *me && !live.contains(&p.0))
                .map(|p| p.0),
        );
    }
    let mut seen: std::collections::HashSet<i32> = out.iter().copied().collect();
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        for p in &procs {
            if p.1 == parent && seen.insert(p.0) {
                out.push(p.0);
            }
        }
        i += 1;
    }
    out
}

/// The run's processes still alive.
pub fn tree(ids: &RunIds) -> Vec<i32> {
    if let Some(cg) = ids.cgroup.as_deref().filter(|c| c.exists()) {
        return super::cgroup::procs(cg);
    }
    ids.supervisor
        .map(|sid| without_cgroup(sid, ids.reaper.as_ref()))
        .unwrap_or_default()
}

/// Kills the run's whole tree and waits (up to 5 s) until it is gone.
pub fn kill_tree(ids: &RunIds) -> bool {
    let t0 = Instant::now();
    let mut killed = std::collections::HashSet::new();
    loop {
        // Orphans the daemon inherited are its children: reap the dead ones.
        for &p in &killed {
            crate::sys::reap(p);
        }
        let pids = tree(ids);
        if pids.is_empty() {
            return true;
        }
        if t0.elapsed() > Duration::from_secs(5) {
            return false;
        }
        match ids.cgroup.as_deref().filter(|c| c.exists()) {
            Some(cg) => super::cgroup::kill_all(cg),
            None => pids.iter().for_each(|&p| {
                crate::sys::kill(p, libc::SIGKILL);
                killed.insert(p);
            }),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks a run. `Vanished` and an orphaned tree both leave a status on
/// disk (lost, or killed with the reason) before they are reported.
pub fn probe(lock_file: &Path, ids: &RunIds) -> Result<Liveness> {
    let lock = try_lock(lock_file, ids.run)?;
    if lock.is_none() {
        match ids.supervisor {
            Some(pid) if !is_supervisor(pid, ids.dir) => tracing::warn!(
                "run {}: its lock is held, but not by its supervisor (pid {pid} is gone): not taken as alive",
                ids.run
            ),
            _ => return Ok(Liveness::Alive),
        }
    }
    if let Ok(Some(status)) = files::read_json::<RunStatus>(ids.dir, files::STATUS) {
        return Ok(Liveness::Ended(status));
    }
    std::fs::create_dir_all(ids.dir).with_context(|| format!("create {}", ids.dir.display()))?;
    let alive = tree(ids);
    if !alive.is_empty() {
        let killed = kill_tree(ids);
        let status = RunStatus {
            started_at: 0,
            finished_at: crate::time::now_ms(),
            exit_code: None,
            signal: Some(libc::SIGKILL),
            ended_by: EndedBy::SupervisorDied,
            message: Some(format!(
                "its supervisor died while {} process(es) of the run lived on (did the task kill it?); the tree was killed{}",
                alive.len(),
                if killed {
                    ""
                } else {
                    " (some processes did not die in 5 s)"
                }
            )),
            log_dropped: 0,
            log_error: None,
            detected: None,
        };
        files::write_atomic(ids.dir, files::STATUS, &status)?;
        return Ok(Liveness::Ended(status));
    }
    let lost = super::launch::lost_status();
    files::write_atomic(ids.dir, files::STATUS, &lost)?;
    Ok(Liveness::Vanished(lost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_sees_a_held_lock_as_alive_and_a_free_one_without_status_as_lost() {
        let dir = tempfile::tempdir().unwrap();
        let lock_file = dir.path().join("runs.lock");
        std::fs::write(&lock_file, "").unwrap();
        let run_dir = dir.path().join("runs/5");
        let ids = RunIds {
            run: 5,
            dir: &run_dir,
            supervisor: None,
            cgroup: None,
            reaper: None,
        };
        // Another open file description holds byte 5: the run is alive.
        let held = try_lock(&lock_file, 5).unwrap().expect("free at first");
        assert!(matches!(probe(&lock_file, &ids).unwrap(), Liveness::Alive));
        assert!(
            try_lock(&lock_file, 6).unwrap().is_some(),
            "other runs are unaffected"
        );
        drop(held);
        // Free and no status: lost, and the lost status is now on disk.
        assert!(matches!(
            probe(&lock_file, &ids).unwrap(),
            Liveness::Vanished(_)
        ));
        let on_disk: RunStatus = files::read_json(&run_dir, files::STATUS).unwrap().unwrap();
        assert_eq!(on_disk.ended_by, EndedBy::Lost);
        // A second probe reads it back instead of writing again.
        assert!(matches!(
            probe(&lock_file, &ids).unwrap(),
            Liveness::Ended(_)
        ));
    }

    #[test]
    fn a_lock_held_by_a_stranger_is_not_a_live_supervisor() {
        let dir = tempfile::tempdir().unwrap();
        let lock_file = dir.path().join("runs.lock");
        std::fs::write(&lock_file, "").unwrap();
        let run_dir = dir.path().join("runs/9");
        let _stranger = try_lock(&lock_file, 9).unwrap().expect("free");
        // pid 1 is not a supervisor of this run.
        let ids = RunIds {
            run: 9,
            dir: &run_dir,
            supervisor: Some(1),
            cgroup: None,
            reaper: None,
        };
        assert!(matches!(
            probe(&lock_file, &ids).unwrap(),
            Liveness::Vanished(_)
        ));
    }

    #[test]
    fn a_live_process_in_the_runs_session_is_killed_and_the_run_recorded_killed() {
        let dir = tempfile::tempdir().unwrap();
        let lock_file = dir.path().join("runs.lock");
        std::fs::write(&lock_file, "").unwrap();
        let run_dir = dir.path().join("runs/3");
        // A process in a session of its own stands for an orphaned task tree.
        let mut child = std::process::Command::new("setsid")
            .args(["sleep", "30"])
            .spawn()
            .unwrap();
        let sid = child.id() as i32;
        let t0 = Instant::now();
        // A condition wait: 30 s only where the machine is very slow.
        while in_session(sid).is_empty() && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let ids = RunIds {
            run: 3,
            dir: &run_dir,
            supervisor: Some(sid),
            cgroup: None,
            reaper: None,
        };
        match probe(&lock_file, &ids).unwrap() {
            Liveness::Ended(s) => {
                assert_eq!(s.ended_by, EndedBy::SupervisorDied);
                assert!(s.message.unwrap().contains("the tree was killed"));
            }
            other => panic!("{other:?}"),
        }
        let _ = child.wait();
        assert!(in_session(sid).is_empty(), "the tree is gone");
    }

    #[test]
    fn a_supervisor_is_recognised_by_its_exact_run_folder_and_nothing_else() {
        let a = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let dir = Path::new("/var/lib/nightjar/runs/1");
        assert!(supervises(
            &a(&["/usr/bin/nightjar-supervise", "/var/lib/nightjar/runs/1"]),
            dir
        ));
        assert!(supervises(
            &a(&[
                "/usr/bin/nightjard",
                "supervise",
                "/var/lib/nightjar/runs/1"
            ]),
            dir
        ));
        // Run 12's supervisor is not run 1's, nor a prefix or a lookalike.
        assert!(!supervises(
            &a(&["/usr/bin/nightjar-supervise", "/var/lib/nightjar/runs/12"]),
            dir
        ));
        assert!(!supervises(
            &a(&["/usr/bin/nightjar-supervise", "/var/lib/nightjar/runs"]),
            dir
        ));
        assert!(!supervises(
            &a(&["/home/u/bin/supervise-me", "/var/lib/nightjar/runs/1"]),
            dir
        ));
        assert!(!supervises(
            &a(&["sh", "-c", "nightjar-supervise /var/lib/nightjar/runs/1"]),
            dir
        ));
        assert!(!supervises(
            &a(&[
                "/usr/bin/nightjar-supervise",
                "/var/lib/nightjar/runs/1",
                "x"
            ]),
            dir
        ));
        assert!(!supervises(&a(&[]), dir));
        // A live process: this test binary is no supervisor.
        assert!(!is_supervisor(std::process::id() as i32, dir));
        assert!(arguments(std::process::id() as i32).is_some_and(|v| !v.is_empty()));
    }
}
