//! The result cache on the daemon's side. A task with `cache = true` is
//! looked up once each time it becomes a candidate, before it is placed (a
//! completion from the cache needs no GPU): when an earlier successful run
//! of the same owner has the same cache key (`cache_key.rs`) and its
//! outputs are still there, the task is completed from that run. It gets a
//! run of its own, which did not run: `cached_from` names the earlier run,
//! its output folder gets the earlier run's files (hard links, or copies
//! with `[cache] outputs = "copy"`, made as the task's owner), its log
//! says where it came from, and it ends as every successful run does
//! (validators, output manifest, archive, notifications).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, Result, bail};

use crate::config::CacheOutputs;
use crate::daemon::pipeline::cache_key;
use crate::daemon::run::runenv;
use crate::daemon::state::{Daemon, lock};
use crate::sandbox::files::RunAs;
use crate::scheduler::Placement;
use crate::store::{Candidate, NewRun, RunClass, RunOutcome, RunRow};

impl Daemon {
    /// Completes candidate `c` from the result cache when it opted in and
    /// an earlier run matches; true when it did (the task is no longer
    /// waiting). Looked up once per task until it is claimed.
    pub(in crate::daemon) fn complete_from_cache(self: &Arc<Self>, c: &Candidate) -> bool {
        if !c.spec.cache || !lock(&self.pipeline.cache_looked).insert(c.id) {
            return false;
        }
        match self.cache_lookup(c) {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!("task {}: result cache: {e:#}", c.id);
                false
            }
        }
    }

    /// Forgets that task `task` was looked up (it was claimed for a run).
    pub(in crate::daemon) fn cache_forget(&self, task: i64) {
        lock(&self.pipeline.cache_looked).remove(&task);
    }

    /// The cache key of a run of `spec` from what `captured` found, or why
    /// it has none (recorded as an event of the task).
    pub(in crate::daemon) fn cache_key_of(
        &self,
        task: i64,
        spec: &crate::task::model::TaskSpec,
        start: &nightjar_core::api::manifest::Manifest,
    ) -> Option<String> {
        let uid = self.access.owner_uid(spec.owner.as_ref().map(|o| o.uid));
        let environment = spec
            .environment
            .as_ref()
            .map(|e| self.environment_record(e, spec));
        let env = self.planned_env(spec);
        match cache_key::key(spec, start, &env, environment.as_ref(), uid) {
            Ok(k) => Some(k),
            Err(why) => {
                let note = format!("not cached: {why}");
                if let Err(e) = self
                    .store()
                    .note_event(Some(task), "cache", &note, self.now_ms())
                {
                    tracing::warn!("task {task}: {note} (and cannot record it: {e})");
                }
                None
            }
        }
    }

    fn cache_lookup(self: &Arc<Self>, c: &Candidate) -> Result<bool> {
        if self.store().cache_bypass(c.id)? {
            return Ok(false);
        }
        let captured = self.capture_start(c.id, &c.spec);
        let Some(key) = self.cache_key_of(c.id, &c.spec, captured.start()) else {
            return Ok(false);
        };
        let sources = self.store().cache_sources(&key)?;
        // The newest earlier run whose output folder is still there.
        let Some(source) = sources
            .into_iter()
            .find(|s| s.output.as_deref().is_none_or(|o| Path::new(o).is_dir()))
        else {
            return Ok(false);
        };
        let from = self.store().run(source.run)?;
        let new_run = NewRun {
            gpus: None,
            cpus: None,
            because: Some(format!(
                "result cache: run {} of task {} has the same cache key",
                from.id, from.task_id
            )),
        };
        let Some(run) = self
            .store()
            .claim(c.id, &new_run, &self.cfg.runs_dir(), self.now_ms())?
        else {
            return Ok(false);
        };
        self.cache_forget(c.id);
        let store = self.store();
        store.set_run_cache_key(run.id, &key)?;
        store.set_run_cached_from(run.id, from.id)?;
        drop(store);
        let mut prepared = runenv::build(
            &self.cfg,
            &self.state,
            &c.spec,
            &run,
            &Placement::default(),
            None,
        );
        if let Ok(rs) = &mut prepared {
            // The outputs were made with the earlier run's seed.
            if let Some(seed) = from.seed {
                rs.seed = seed;
            }
            if let Some(why) = self.record_start(captured, &c.spec, &run, rs, &Placement::default())
            {
                prepared = Err(anyhow::anyhow!(why));
            } else if let Some(file) = rs.manifest.take() {
                self.write_manifest_file(run.id, &file);
            }
        }
        let me = Arc::clone(self);
        let output = source.output.map(PathBuf::from);
        tokio::task::spawn_blocking(move || {
            let out = match prepared.and_then(|rs| me.take_outputs(&run, &from, output, &rs)) {
                Ok(()) => RunOutcome {
                    class: RunClass::Ok,
                    exit_code: Some(0),
                    signal: None,
                    finished_at: me.now_ms(),
                    message: Some(format!(
                        "cached from run {} (task {})",
                        from.id, from.task_id
                    )),
                },
                Err(e) => RunOutcome {
                    class: RunClass::AppError,
                    exit_code: None,
                    signal: None,
                    finished_at: me.now_ms(),
                    message: Some(format!("from the result cache (run {}): {e:#}", from.id)),
                },
            };
            let mut delay = std::time::Duration::from_millis(200);
            while !me.finish(run.id, &out) {
                std::thread::sleep(delay);
                delay = (delay * 2).min(std::time::Duration::from_secs(30));
            }
        });
        Ok(true)
    }

    /// Gives cached run `run` the outputs of `from` and a log saying so.
    fn take_outputs(
        &self,
        run: &RunRow,
        from: &RunRow,
        source: Option<PathBuf>,
        rs: &crate::sandbox::files::RunSpec,
    ) -> Result<()> {
        let rel = Path::new("runs").join(run.id.to_string());
        let log = format!(
            "nightjar: completed from the result cache: run {} of task {} (started {}) had the same cache key; this run did not run\n",
            from.id,
            from.task_id,
            crate::time::fmt_local(from.started_at)
        );
        self.state.write(&rel.join("stdout.log"), log.as_bytes())?;
        self.state.write(&rel.join("stderr.log"), b"")?;
        let (Some(src), Some(dst)) = (source, rs.output.clone()) else {
            return Ok(());
        };
        if let Err(e) = self.store().set_run_output(run.id, &dst) {
            tracing::warn!("run {}: cannot record its output folder: {e}", run.id);
        }
        let same = match (src.canonicalize(), dst.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same {
            return Ok(());
        }
        // As the supervisor does for a real run: the folder (made as the
        // owner) must lead inside `output_roots`, checked before and after.
        let within = || {
            crate::sandbox::paths::check_within(&dst, &rs.output_roots).map_err(anyhow::Error::msg)
        };
        within()?;
        copy_tree(
            &src,
            &dst,
            self.cfg.cache.outputs,
            rs.run_as.as_ref(),
            within,
        )
    }
}

/// Copies the folder `src` into `dst` (made if missing; files already there
/// are kept) as `run_as` when given: never as root in a user's folders.
/// `made` checks `dst` once it exists, before anything is copied.
/// Hard links first for [`CacheOutputs::Link`], copies where they fail.
fn copy_tree(
    src: &Path,
    dst: &Path,
    how: CacheOutputs,
    run_as: Option<&RunAs>,
    made: impl Fn() -> Result<()>,
) -> Result<()> {
    let mut mkdir = Command::new("mkdir");
    mkdir.arg("-p").arg("--").arg(dst);
    run(mkdir, run_as).context("make the output folder")?;
    made()?;
    let from = src.join(".");
    let cp = |link: bool| {
        let mut c = Command::new("cp");
        c.args([
            "-R",
            "--no-dereference",
            "--preserve=mode,timestamps,links",
            "-n",
        ]);
        if link {
            c.arg("--link");
        }
        c.arg("--").arg(&from).arg(dst);
        run(c, run_as)
    };
    match how {
        CacheOutputs::Link => cp(true).or_else(|e| {
            tracing::debug!("hard links failed ({e:#}); copying");
            cp(false)
        }),
        CacheOutputs::Copy => cp(false),
    }
    .with_context(|| format!("copy {} to {}", src.display(), dst.display()))
}

/// Runs `c` (as `run_as` when given) with an empty environment; its
/// stderr is the error.
fn run(mut c: Command, run_as: Option<&RunAs>) -> Result<()> {
    use std::os::unix::process::CommandExt;
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C");
    if let Some(r) = run_as {
        // Groups, gid and uid for good, before exec (as a task's own drop).
        let become_ =
            crate::sandbox::identity::Become::new(r, Path::new("/")).map_err(anyhow::Error::msg)?;
        // SAFETY: `apply` makes only async-signal-safe calls on memory
        // prepared before the fork.
        unsafe {
            c.pre_exec(move || become_.apply().map_err(|(_, e)| e));
        }
    }
    let out = c.output().context("start")?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}
