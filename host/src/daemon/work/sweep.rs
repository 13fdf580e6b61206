//! Retention by outcome for runs' local outputs and scratch (`[retention]
//! outputs_*`), swept with every collection and right after an archive is
//! verified.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::daemon::state::Daemon;
use crate::store::outputs::{ExpiredOutputs, OutputCutoffs};

/// Runs looked at per sweep batch.
const BATCH: usize = 500;

/// One sweep at a time (`nightjar gc`, the hourly collection and an
/// archive's end may all start one).
static SWEEPING: Mutex<()> = Mutex::new(());

/// Why retention keeps `folder`, a folder a task chose, whole: unless it is
/// named by its real path (no link, no `..` on the way: `real` is where it
/// resolves), is not `/`, does not hold (or is) any of `protected` (the
/// state dir, scratch, the archive roots, the task's workdir, the home
/// folder), and lies strictly inside one of `roots` when there are any.
pub(in crate::daemon) fn keep_whole(
    folder: &Path,
    real: Option<&Path>,
    protected: &[PathBuf],
    roots: &[PathBuf],
) -> Option<String> {
    let shown = folder.display();
    if real != Some(folder) {
        return Some(format!(
            "{shown} is reached through a link or `..` ({}); kept",
            real.map_or_else(|| "it does not resolve".into(), |r| r.display().to_string())
        ));
    }
    if folder.parent().is_none() {
        return Some(format!("{shown} is the root of the file system; kept"));
    }
    if let Some(p) = protected.iter().find(|p| p.starts_with(folder)) {
        return Some(format!("{shown} holds {}; kept", p.display()));
    }
    if !roots.is_empty() && !roots.iter().any(|r| folder.starts_with(r) && folder != r) {
        return Some(format!(
            "{shown} is not inside one of output_roots (a root itself is never removed); kept"
        ));
    }
    None
}

/// Bytes under `path` (regular files, links not followed), bounded by `limit` entries.
fn size_of(path: &Path, limit: &mut usize) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return if meta.is_file() { meta.len() } else { 0 };
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    let mut total = 0;
    for e in entries.flatten() {
        if *limit == 0 {
            break;
        }
        *limit -= 1;
        total += size_of(&e.path(), limit);
    }
    total
}

impl Daemon {
    fn cutoffs(&self, now: i64) -> OutputCutoffs {
        let r = &self.cfg.retention;
        let before = |d: Duration| now.saturating_sub(crate::time::span_ms(d));
        OutputCutoffs {
            archived: before(r.outputs_archived),
            succeeded: before(r.outputs_succeeded),
            failed: before(r.outputs_failed),
            cancelled: before(r.outputs_cancelled),
        }
    }

    /// Removes the local outputs and scratch of every run past its
    /// outcome's retention; (runs, bytes). `dry_run` only counts.
    pub fn sweep_outputs(&self, dry_run: bool) -> (usize, u64) {
        // Removals one at a time; a dry run removes nothing and waits for
        // no collection (a timer's may take minutes).
        let _one = (!dry_run).then(|| crate::daemon::locks::gate(&SWEEPING));
        let cutoffs = self.cutoffs(self.now_ms());
        let (mut runs, mut bytes, mut failed) = (0, 0, 0);
        let mut after = 0usize;
        loop {
            let batch = match self.store().expired_outputs(&cutoffs, BATCH + after) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!("retention: cannot read the expired outputs: {e}");
                    break;
                }
            };
            let fresh: Vec<ExpiredOutputs> = batch.into_iter().skip(after).collect();
            if fresh.is_empty() {
                break;
            }
            let mut done = Vec::new();
            for e in &fresh {
                let mut budget = 1_000_000;
                let folders = self.local_folders(e);
                let size = folders.iter().map(|p| size_of(p, &mut budget)).sum::<u64>();
                if dry_run {
                    (runs, bytes) = (runs + 1, bytes + size);
                    continue;
                }
                // Only what was removed is counted; a failure is tried again.
                match self.remove_local(e, &folders, &cutoffs) {
                    Ok(()) => {
                        done.push(e.run);
                        (runs, bytes) = (runs + 1, bytes + size);
                    }
                    Err(why) => {
                        failed += 1;
                        tracing::warn!("retention: run {}: {why}", e.run);
                    }
                }
            }
            if dry_run {
                after += fresh.len();
            } else if let Err(e) = self.store().outputs_removed(&done, self.now_ms()) {
                tracing::warn!("retention: cannot record removed outputs: {e}");
                break;
            } else if done.len() < fresh.len() {
                after += fresh.len() - done.len();
            }
            if fresh.len() < BATCH {
                break;
            }
        }
        if runs > 0 && !dry_run {
            tracing::info!(
                "retention: removed the local outputs and scratch of {runs} runs ({bytes} bytes)"
            );
        }
        if failed > 0 {
            tracing::warn!(
                "retention: the outputs of {failed} runs could not be removed (said above); they are tried again at the next sweep"
            );
        }
        (runs, bytes)
    }

    /// After run `run`'s archive is verified: its outputs go at once when
    /// `[retention] outputs_archived` is 0s.
    pub(in crate::daemon) fn after_archive(&self, run: i64) {
        if self.cfg.retention.outputs_archived.is_zero() {
            let (n, _) = self.sweep_outputs(false);
            tracing::debug!("run {run}: archived; outputs of {n} runs removed");
        }
    }

    /// The folders of `e` retention removes: scratch, the run folder's
    /// `output`, and a task-chosen output folder when `[retention]
    /// task_outputs` allows.
    fn local_folders(&self, e: &ExpiredOutputs) -> Vec<PathBuf> {
        let mut v = vec![crate::daemon::run::runenv::scratch_dir(&self.cfg, e.run)];
        if let Some(out) = &e.output
            && (*out == self.own_output(e.run) || self.cfg.retention.task_outputs)
        {
            v.push(out.clone());
        }
        v
    }

    /// The output folder nightjar makes for run `run` (`${OUTPUT_PATH}` without `output =`).
    fn own_output(&self, run: i64) -> PathBuf {
        self.cfg
            .state_dir
            .join("runs")
            .join(run.to_string())
            .join("output")
    }

    /// What a task's own output folder must never be, nor hold.
    fn protected(&self, e: &ExpiredOutputs) -> Vec<PathBuf> {
        let a = &self.cfg.archive;
        let mut v = vec![self.cfg.state_dir.clone(), self.cfg.scratch_dir()];
        v.extend(a.root.clone());
        v.extend(
            a.projects
                .values()
                .filter(|r| r.as_str() != "off")
                .map(PathBuf::from),
        );
        v.extend(e.workdir.clone());
        v.extend(std::env::var_os("HOME").map(PathBuf::from));
        v.iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .collect()
    }

    fn remove_local(
        &self,
        e: &ExpiredOutputs,
        folders: &[PathBuf],
        cutoffs: &OutputCutoffs,
    ) -> Result<(), String> {
        let theirs = folders.get(1).filter(|f| **f != self.own_output(e.run));
        // Looked at again right before anything goes: the task may have
        // been queued again, another run may have started in the folder.
        match self
            .store()
            .outputs_needed(e.run, theirs.map(PathBuf::as_path), cutoffs)
        {
            Ok(false) => {}
            Ok(true) => {
                return Err(
                    "kept: its task was queued again, or a live run uses its output folder".into(),
                );
            }
            Err(err) => return Err(format!("cannot tell whether its outputs are in use: {err}")),
        }
        self.state
            .remove_all(&crate::daemon::run::runenv::scratch_rel(e.run))
            .map_err(|err| format!("cannot remove its scratch: {err}"))?;
        for f in folders.iter().skip(1) {
            if *f == self.own_output(e.run) {
                let rel = Path::new("runs").join(e.run.to_string()).join("output");
                self.state
                    .remove_all(&rel)
                    .map_err(|err| format!("cannot remove {}: {err}", f.display()))?;
                continue;
            }
            // A task's own folder: a real folder (never a link, nor reached
            // through one), inside `output_roots` when the config has them.
            let real = match std::fs::canonicalize(f) {
                Ok(real) => real,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => return Err(format!("cannot look at {}: {err}", f.display())),
            };
            let roots: Vec<PathBuf> = self
                .cfg
                .output_roots
                .iter()
                .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
                .collect();
            if let Some(why) = keep_whole(f, Some(&real), &self.protected(e), &roots) {
                return Err(why);
            }
            let who = crate::privsep::identity(e.owner.as_ref())?;
            crate::privsep::as_owner(who.as_ref(), |_| remove_real(f))??;
        }
        Ok(())
    }
}

/// Removes the folder `f` as whoever calls (the task's owner, on a thread
/// acting as them): its parent opened once as a real folder (no link on
/// its way), then everything under it removed relative to that descriptor
/// (iteratively, at any depth: links are removed, never followed). Gone already: nothing to do.
fn remove_real(f: &Path) -> Result<(), String> {
    let (Some(parent), Some(name)) = (f.parent(), f.file_name()) else {
        return Err(format!("{} has no parent folder; kept", f.display()));
    };
    let dir = crate::privsep::open::real_dir(parent)?;
    match dir.symlink_metadata(name) {
        Ok(m) if m.is_dir() => crate::privsep::remove::remove_tree(&dir, Path::new(name))
            .map_err(|err| format!("cannot remove {}: {err}", f.display())),
        Ok(_) => Err(format!("{} is not a folder; kept", f.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(format!("cannot look at {}: {err}", f.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::keep_whole;
    use std::path::{Path, PathBuf};

    #[test]
    fn a_task_folder_is_removed_whole_only_by_its_real_path_strictly_inside_a_root() {
        let p = PathBuf::from;
        let protected = [p("/var/lib/nightjar"), p("/home/u/code"), p("/nas")];
        let keep = |f: &str, real: &str, roots: &[PathBuf]| {
            keep_whole(Path::new(f), Some(Path::new(real)), &protected, roots)
        };
        assert_eq!(keep("/srv/r/run1", "/srv/r/run1", &[p("/srv/r")]), None);
        assert_eq!(keep("/data/run1", "/data/run1", &[]), None);
        for (f, real) in [
            ("/", "/"),
            ("/var", "/var"),
            ("/var/lib/nightjar", "/var/lib/nightjar"),
            ("/home/u", "/home/u"),
            ("/home/u/code", "/home/u/code"),
            ("/srv/r/x/..", "/srv/r"),
            ("/srv/r/link/out", "/etc/out"),
        ] {
            assert!(keep(f, real, &[]).is_some(), "{f} would be removed");
        }
        assert!(
            keep("/srv/r", "/srv/r", &[p("/srv/r")]).is_some(),
            "a whole root"
        );
        assert!(keep("/srv/other", "/srv/other", &[p("/srv/r")]).is_some());
        assert!(keep_whole(Path::new("/gone"), None, &protected, &[]).is_some());
    }
}
