//! The daemon's side of a run: start the supervisor in its own session with
//! the run's lock already held, talk to it over its stdin and stdout, and
//! find out later whether a supervisor from before a restart is still alive.

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, Result};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use super::files::{EndedBy, RunSpec, RunStatus};

/// How to start a supervisor: the slim `nightjar-supervise` binary next to
/// `nightjard` when it is there, else `nightjard supervise`.
#[derive(Debug, Clone)]
pub struct SupervisorCmd {
    /// The program.
    pub program: std::path::PathBuf,
    /// Arguments before the run folder.
    pub prefix: Vec<String>,
}

impl SupervisorCmd {
    /// Picks the command for the `nightjard` binary at `exe`.
    pub fn for_exe(exe: &Path) -> SupervisorCmd {
        let slim = exe.with_file_name("nightjar-supervise");
        if slim.is_file() {
            SupervisorCmd {
                program: slim,
                prefix: Vec::new(),
            }
        } else {
            SupervisorCmd {
                program: exe.to_path_buf(),
                prefix: vec!["supervise".into()],
            }
        }
    }
}

/// A supervisor this daemon started.
pub struct Launched {
    /// The supervisor process (our child: waiting on it reaps it).
    pub child: tokio::process::Child,
    /// Its pid.
    pub pid: u32,
}

/// Starts the supervisor on the run folder `dir` with a cleared environment
/// (it closes any descriptor above 2 itself). The spec goes to its stdin
/// as one line; its stdout carries the status back. No `pre_exec`, so the
/// standard library spawns with `posix_spawn` (no fork of the daemon); the
/// supervisor makes its own session and takes the run's lock itself. Should
/// this daemon die before that, the next daemon finds the lock free and no
/// status, marks the run lost under the lock, and the late supervisor, once
/// it has the lock, sees that status and never starts the task.
/// Must run inside the tokio runtime.
pub fn launch(sup: &SupervisorCmd, dir: &Path) -> Result<Launched> {
    let mut cmd = std::process::Command::new(&sup.program);
    // A cleared environment: the task must not find the daemon's secrets in
    // /proc/<supervisor>/environ. The spec carries everything it needs.
    cmd.env_clear()
        .envs(clock_env(std::env::vars_os()))
        .args(&sup.prefix)
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let child = tokio::process::Command::from(cmd)
        .kill_on_drop(false)
        .spawn()
        .with_context(|| format!("start supervisor {}", sup.program.display()))?;
    let pid = child.id().unwrap_or(0);
    Ok(Launched { child, pid })
}

/// What of the daemon's environment its supervisors keep: only a fake
/// clock. A daemon started under libfaketime (`LD_PRELOAD` naming
/// `libfaketime`, with its `FAKETIME*` settings) hands the same clock to
/// its supervisors, so a test that steps the wall clock steps both sides of
/// a run; nothing else passes, and the supervisor gives its task only the
/// task's own environment. Another `LD_PRELOAD` (a memory allocator, say)
/// stays the daemon's.
fn clock_env(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let vars: Vec<_> = vars
        .filter(|(k, v)| {
            let k = k.to_string_lossy();
            k.starts_with("FAKETIME")
                || (k == "LD_PRELOAD"
                    && v.to_string_lossy()
                        .split([':', ' '])
                        .filter(|lib| !lib.is_empty())
                        .all(|lib| lib.contains("libfaketime")))
        })
        .collect();
    let faked = vars.iter().any(|(k, _)| k == "LD_PRELOAD");
    if faked { vars } else { Vec::new() }
}

/// Talks to a launched supervisor: sends the spec, waits for its status line,
/// lets `record` commit it, and acknowledges only a committed one (`ok`);
/// otherwise it says `retry` and the supervisor keeps the status (it offers
/// it again, or writes `status.json`). Reaps the process. Returns the status
/// once recorded, or `None` when the supervisor ended without a recorded
/// report (then `status.json` or [`probe`] tells).
pub async fn converse<F: std::future::Future<Output = bool>>(
    mut child: tokio::process::Child,
    spec: &RunSpec,
    mut record: impl FnMut(RunStatus) -> F,
) -> Option<RunStatus> {
    let mut stdin = child.stdin.take()?;
    let stdout = child.stdout.take()?;
    let mut line = serde_json::to_vec(spec).ok()?;
    line.push(b'\n');
    let mut status = None;
    if stdin.write_all(&line).await.is_ok() {
        let mut reader = tokio::io::BufReader::new(stdout);
        loop {
            let mut reply = String::new();
            match reader.read_line(&mut reply).await {
                Ok(n) if n > 0 => {}
                _ => break,
            }
            let Ok(s) = serde_json::from_str::<RunStatus>(&reply) else {
                break;
            };
            if record(s.clone()).await {
                let _ = stdin.write_all(b"ok\n").await;
                status = Some(s);
                break;
            }
            if stdin.write_all(b"retry\n").await.is_err() {
                break;
            }
        }
    }
    drop(stdin);
    let _ = child.wait().await;
    status
}

/// What a run says about its supervisor.
#[derive(Debug)]
pub enum Liveness {
    /// A supervisor holds the lock: the run goes on.
    Alive,
    /// The run ended and left its status in the run folder.
    Ended(RunStatus),
    /// No supervisor and no readable status: it vanished (host reboot,
    /// kill -9 of the supervisor); a status saying `lost` is now on disk.
    Vanished(RunStatus),
}

/// The status of a run whose supervisor vanished without a word.
pub(super) fn lost_status() -> RunStatus {
    RunStatus {
        started_at: 0,
        finished_at: crate::time::now_ms(),
        exit_code: None,
        signal: None,
        ended_by: EndedBy::Lost,
        message: None,
        log_dropped: 0,
        log_error: None,
        detected: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slim_supervisor_is_preferred_and_nightjar_supervise_is_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("nightjar");
        let fallback = SupervisorCmd::for_exe(&exe);
        assert_eq!(fallback.program, exe);
        assert_eq!(fallback.prefix, vec!["supervise".to_string()]);
        std::fs::write(dir.path().join("nightjar-supervise"), "").unwrap();
        let slim = SupervisorCmd::for_exe(&exe);
        assert_eq!(slim.program, dir.path().join("nightjar-supervise"));
        assert!(slim.prefix.is_empty());
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn supervisors_keep_only_a_fake_clock_of_the_daemons_environment() {
        let lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
        let daemon = env(&[
            ("LD_PRELOAD", lib),
            ("FAKETIME_TIMESTAMP_FILE", "/tmp/offset"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
            ("SECRET_TOKEN", "must-not-leak"),
            ("PATH", "/usr/bin"),
        ]);
        let kept = clock_env(daemon.into_iter());
        let names: Vec<_> = kept
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "LD_PRELOAD",
                "FAKETIME_TIMESTAMP_FILE",
                "FAKETIME_DONT_FAKE_MONOTONIC"
            ]
        );
        let other = env(&[
            ("LD_PRELOAD", &format!("/usr/lib/libjemalloc.so.2:{lib}")),
            ("FAKETIME", "-4h"),
        ]);
        assert!(
            clock_env(other.into_iter()).is_empty(),
            "another preloaded library is not handed on, nor a clock without libfaketime"
        );
        assert!(clock_env(env(&[("FAKETIME", "+1h")]).into_iter()).is_empty());
    }
}
