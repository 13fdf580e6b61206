//! Checkpoint resume at the start of a run, and the preemption signal of a
//! task that saves checkpoints (see `nightjar_core::task::checkpoint`).
//!
//! An attempt after an earlier run of the same task (a retry, or a requeue
//! after preemption) resumes from the newest complete checkpoint: `resume`
//! with `${CHECKPOINT}` replaced is appended to the command and
//! `NIGHTJAR_CHECKPOINT` is set. For a shell string the resume text is
//! appended after a space, as shell text, with the checkpoint's path
//! shell-quoted; for an argument list the resume text is split into words
//! at whitespace (quotes are not interpreted), then `${CHECKPOINT}` and the
//! other variables are substituted in each word, so a path with spaces stays
//! one argument. A first attempt never resumes; no complete checkpoint (or
//! any trouble finding one) starts the command unchanged, with a note.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::daemon::run::checkpoint_find::newest_complete;
use crate::daemon::state::Daemon;
use crate::task::checkpoint::CHECKPOINT_VAR;
use crate::task::model::{CommandSpec, TaskSpec};
use crate::task::vars::{self, Subst};

/// What looking for a checkpoint gave an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resumed {
    /// The checkpoint the attempt resumes from.
    pub checkpoint: Option<PathBuf>,
    /// What was found, for the task's events.
    pub note: String,
}

/// Applies the task's checkpoint to a run being built: `values` are the
/// run's variables, `argv` and `env` its substituted command and
/// environment. `None` when the task has no checkpoint or this is its first
/// attempt (nothing was looked for). Never an error: trouble is a note.
pub fn apply(
    spec: &TaskSpec,
    attempt: i64,
    values: &BTreeMap<&str, String>,
    argv: &mut Vec<String>,
    env: &mut BTreeMap<String, String>,
) -> Option<Resumed> {
    let Some(cp) = &spec.checkpoint else {
        return None;
    };
    if attempt <= 1 {
        return None;
    }
    let not_resumed = |why: String| {
        Some(Resumed {
            checkpoint: None,
            note: format!("{why}; started without resuming"),
        })
    };
    // Variable values are file names here, not glob syntax.
    let pattern = match vars::expand(&cp.pattern, true, |n| {
        values.get(n).map(|v| Subst::Value(globset::escape(v)))
    }) {
        Ok(p) if p.starts_with('/') => p,
        Ok(p) => format!("{}/{p}", globset::escape(&spec.workdir.to_string_lossy())),
        Err(e) => return not_resumed(format!("checkpoint.pattern: {e}")),
    };
    // The owner's folders, searched as them (a link there reaches only
    // what they could reach).
    let found = crate::privsep::identity(spec.owner.as_ref()).and_then(|who| {
        crate::privsep::as_owner(who.as_ref(), |_| {
            newest_complete(&pattern, cp, std::time::SystemTime::now())
        })
    });
    let found = match found {
        Ok(f) => f,
        Err(e) => return not_resumed(format!("checkpoints not searched: {e}")),
    };
    let Some(path) = found.path else {
        return Some(Resumed {
            checkpoint: None,
            note: found.note,
        });
    };
    let Some(text) = path.to_str() else {
        return not_resumed(format!(
            "the newest complete checkpoint {} is not a UTF-8 path",
            path.display()
        ));
    };
    let expand = |t: &str, checkpoint: &str| {
        vars::expand(t, true, |n| match n {
            CHECKPOINT_VAR => Some(Subst::Value(checkpoint.to_string())),
            _ => values.get(n).cloned().map(Subst::Value),
        })
    };
    let shell = matches!(spec.command, CommandSpec::Shell(_));
    let added: Result<Vec<String>, _> = match &cp.resume {
        None => Ok(Vec::new()),
        Some(r) if shell => expand(r, &shell_quote(text)).map(|r| vec![r]),
        Some(r) => r.split_whitespace().map(|w| expand(w, text)).collect(),
    };
    let added = match added {
        Ok(a) => a,
        Err(e) => return not_resumed(format!("checkpoint.resume: {e}")),
    };
    match (shell, argv.last_mut()) {
        (true, Some(script)) => {
            // A script written as a TOML `"""` string ends with a newline:
            // the words go on its last line, not on a line of their own.
            if !added.is_empty() {
                script.truncate(script.trim_end().len());
            }
            for a in added {
                script.push(' ');
                script.push_str(&a);
            }
        }
        _ => argv.extend(added),
    }
    env.insert(format!("NIGHTJAR_{CHECKPOINT_VAR}"), text.to_string());
    Some(Resumed {
        checkpoint: Some(path),
        note: found.note,
    })
}

/// `s` as one word of `/bin/sh`: bare when it holds only safe characters,
/// else in single quotes (a `'` in it written `'\''`).
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl Daemon {
    /// Stores what run `run` resumed from (and the note of what was found).
    pub(in crate::daemon) fn record_checkpoint(
        &self,
        run: i64,
        checkpoint: Option<&std::path::Path>,
        note: Option<&str>,
    ) {
        let Some(note) = note else {
            return;
        };
        let path = checkpoint.map(|p| p.to_string_lossy());
        if let Err(e) = self
            .store()
            .record_checkpoint(run, path.as_deref(), note, self.now_ms())
        {
            tracing::warn!("run {run}: cannot record its checkpoint: {e}");
        }
    }

    /// Asks run `run`'s supervisor to stop it for a preemption: a task that
    /// saves checkpoints gets its own signal and grace (the supervisor's
    /// SIGUSR1 says so), any other the same stop as a cancel. Either way
    /// the daemon keeps its own deadline (that grace plus the slack): a
    /// supervisor stopped or hung does not keep the run, and what it holds,
    /// past it.
    pub(in crate::daemon) fn preempt_supervisor(&self, task: i64, run: i64, pid: Option<i64>) {
        let checkpoint = self.store().task_spec(task).ok().and_then(|s| s.checkpoint);
        let grace = checkpoint
            .as_ref()
            .and_then(|c| c.grace)
            .unwrap_or(self.cfg.sandbox.grace);
        self.set_deadline(run, crate::daemon::run::watchdog::Deadline::preempt(grace));
        // A session whose note the store refused (busy past its timeout) is
        // known in memory: stopped all the same.
        let pid = pid.or_else(|| {
            crate::daemon::state::lock(&self.runs.placed)
                .get(&run)
                .map(|h| h.session)
                .filter(|&s| s > 0)
                .map(i64::from)
        });
        if checkpoint.is_none() {
            return self.stop_run(run, pid, crate::daemon::run::executor::Stop::Cancel);
        }
        self.stop_run(run, pid, crate::daemon::run::executor::Stop::Checkpoint);
    }
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;
