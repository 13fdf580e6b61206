//! The daemon's side of manifests: capturing one per submitted entry (off
//! the runtime, before the entry is stored), one per run on the scheduler
//! thread before the run is claimed (so a refusal needs no supervisor),
//! completing it with the run as prepared, and keeping it in the database
//! and the run folder (`manifest.json`, both captures).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::config::InputsChanged;
use crate::daemon::state::{Daemon, lock};
use crate::manifest::{self, Budget, HashCache, Key, Redactor, Subject};
use crate::sandbox::files::RunSpec;
use crate::scheduler::Placement;
use crate::store::RunRow;
use crate::task::model::{NewEntry, TaskSpec};
use crate::time::now_ms;
use nightjar_core::api::manifest::{
    FILE, GpuDevice, GpuRecord, Limits, Manifest, Phase, PolicyRecord,
};

/// A start capture and the submit manifest it was compared with.
pub(in crate::daemon) struct Captured {
    /// At start (completed once the run is prepared).
    start: Manifest,
    /// At submit, when there is one.
    submit: Option<Manifest>,
}

impl Captured {
    /// The capture at start, as it stands.
    pub(in crate::daemon) fn start(&self) -> &Manifest {
        &self.start
    }
}

/// What entries of one submission may share a capture by: workdir, inputs, env.
type Shared = (PathBuf, Vec<PathBuf>, BTreeMap<String, String>);

/// The store's hash cache, locked once per batch of lookups.
struct StoreCache<'a>(&'a Daemon);

impl HashCache for StoreCache<'_> {
    fn lookup(&mut self, keys: &[Key]) -> HashMap<Key, String> {
        self.0
            .store()
            .lookup_hashes(keys, now_ms())
            .unwrap_or_else(|e| {
                tracing::warn!("input hash cache: {e}; hashing instead");
                HashMap::new()
            })
    }

    fn remember(&mut self, fresh: &[(Key, String, String)]) {
        if let Err(e) = self.0.store().remember_hashes(fresh, now_ms()) {
            tracing::warn!("input hash cache: cannot remember hashes: {e}");
        }
    }
}

impl Daemon {
    fn budget(&self) -> Budget<'_> {
        Budget {
            git: self.cfg.manifest.git_timeout,
            python: self.cfg.manifest.python_timeout,
            repos: Some(&self.runs.repos),
        }
    }

    /// [`manifest::capture`] on a thread acting as the task's owner (git
    /// and pip run as them, inputs are read as them), the hash cache
    /// answered from the store on this thread.
    fn capture_as_owner(
        &self,
        spec: &TaskSpec,
        phase: Phase,
        subject: &Subject<'_>,
        earlier: Option<&Manifest>,
        verify: bool,
    ) -> Manifest {
        let budget = self.budget();
        let captured = crate::privsep::identity(spec.owner.as_ref()).and_then(|who| {
            let mut cache = StoreCache(self);
            crate::privsep::as_owner_serving(
                who.as_ref(),
                |call| manifest::serve(&mut cache, call),
                |owned, ask| {
                    let mut remote = manifest::Remote(ask);
                    manifest::capture(phase, subject, earlier, &mut remote, verify, budget, owned)
                },
            )
        });
        captured.unwrap_or_else(|e| {
            let mut m = Manifest::new(phase, now_ms(), subject.workdir.to_path_buf());
            m.notes.push(format!("nothing captured: {e}"));
            m
        })
    }

    /// The environment a task's run will see, as far as it is known before
    /// it is placed: the allow-listed daemon variables and the task's own.
    pub(in crate::daemon) fn planned_env(&self, spec: &TaskSpec) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = self
            .cfg
            .sandbox
            .env_allow
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.clone(), v)))
            .collect();
        env.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(e) = &spec.environment {
            crate::daemon::run::environment::activate(&mut env, e);
        }
        env
    }

    /// The submit manifest of each entry (by index). Blocking: git, pip and
    /// hashing run here; call it off the runtime. Entries that share a
    /// workdir, inputs and environment share one capture.
    pub fn capture_submit(&self, entries: &[NewEntry], verify: bool) -> Vec<Option<Manifest>> {
        let mut done: Vec<(Shared, Manifest)> = Vec::new();
        entries
            .iter()
            .map(|e| {
                let spec = e.members.first()?;
                let env = self.planned_env(spec);
                let shared = (spec.workdir.clone(), spec.inputs.clone(), env);
                if let Some((_, m)) = done.iter().find(|(s, _)| *s == shared) {
                    return Some(m.clone());
                }
                let subject = Subject {
                    workdir: &shared.0,
                    inputs: &shared.1,
                    env: &shared.2,
                };
                let m = self.capture_as_owner(spec, Phase::Submit, &subject, None, verify);
                done.push((shared, m.clone()));
                Some(m)
            })
            .collect()
    }

    /// The submit manifest of a rerun of the task `spec`, captured as a
    /// submit's is but against `recorded` (the start manifest of the run
    /// rerun): an input unchanged since is a stat, and each one that
    /// differs is in `inputs_changed`. Blocking, like [`Self::capture_submit`].
    pub fn capture_rerun(&self, spec: &TaskSpec, recorded: &Manifest) -> Manifest {
        let env = self.planned_env(spec);
        let subject = Subject {
            workdir: &spec.workdir,
            inputs: &spec.inputs,
            env: &env,
        };
        self.capture_as_owner(spec, Phase::Submit, &subject, Some(recorded), false)
    }

    /// What the world holds for task `task` now, before it is claimed
    /// (git, inputs against the submit manifest, Python). Blocking; runs on
    /// the scheduler thread: an input unchanged since submit is a stat.
    pub(in crate::daemon) fn capture_start(&self, task: i64, spec: &TaskSpec) -> Captured {
        let submit = self.store().submit_manifest(task).unwrap_or_else(|e| {
            tracing::warn!("task {task}: cannot read its submit manifest: {e}");
            None
        });
        let env = self.planned_env(spec);
        let subject = Subject {
            workdir: &spec.workdir,
            inputs: &spec.inputs,
            env: &env,
        };
        let mut m = self.capture_as_owner(spec, Phase::Start, &subject, submit.as_ref(), false);
        if submit.is_none() {
            m.notes.push(
                "no submit manifest (submitted by an older nightjar): inputs not compared".into(),
            );
        }
        // A schedule runs on the data of its night: its instances' inputs
        // are expected to differ from those at the template's submit.
        if !m.inputs_changed.is_empty() && self.store().is_recurring_instance(task).unwrap_or(false)
        {
            m.notes.push(format!(
                "{} input(s) differ from the recurring template's submit: expected of a schedule, not flagged",
                m.inputs_changed.len()
            ));
            m.inputs_changed.clear();
        }
        Captured { start: m, submit }
    }

    /// Completes run `run`'s start manifest with what it was given, keeps
    /// it (database, run folder) and says why the run must not start, if
    /// its inputs changed and the config refuses that.
    pub(in crate::daemon) fn record_start(
        &self,
        captured: Captured,
        spec: &TaskSpec,
        run: &RunRow,
        rs: &mut RunSpec,
        placement: &Placement,
    ) -> Option<String> {
        let Captured {
            start: mut m,
            submit,
        } = captured;
        let env: BTreeMap<String, String> = rs.env.iter().cloned().collect();
        let redactor = Redactor::new(&env, &self.cfg.sandbox.redact_env);
        m.task = Some(run.task_id);
        m.run = Some(run.id);
        m.attempt = Some(run.attempt);
        m.seed = Some(rs.seed);
        let mut shown = spec.clone();
        shown.env = redactor.env(&spec.env);
        m.spec = Some(shown);
        m.command = rs.argv.iter().map(|a| redactor.text(a)).collect();
        m.env = redactor.env(&env);
        m.limits = Some(Limits {
            gpus: placement.gpus.clone(),
            cpus: placement.cpus.clone(),
            timeout_ms: rs.timeout_ms,
            grace_ms: rs.grace_ms,
            log_cap: rs.log_cap,
            mem_limit: rs.mem_limit,
            checkpoint: rs.checkpoint.clone(),
        });
        m.environment = spec
            .environment
            .as_ref()
            .map(|e| self.environment_record(e, spec));
        m.system = Some(manifest::system::info());
        m.gpus = Some(self.gpu_record(&placement.gpus));
        m.policies = lock(&self.pipeline.chain_status)
            .views
            .iter()
            .map(|v| PolicyRecord {
                name: v.name.clone(),
                source: v.source.clone(),
                sha256: v.sha256.clone(),
                api_version: v.api_version.clone(),
            })
            .collect();
        if let Err(e) = self.store().set_run_manifest(run.id, &m) {
            tracing::warn!("run {}: cannot store its manifest: {e}", run.id);
        }
        let submit = submit.map(|s| self.submit_view(s, spec));
        let file =
            serde_json::to_string_pretty(&serde_json::json!({ "submit": submit, "start": &m }))
                .unwrap_or_default();
        let refuse = self.cfg.manifest.inputs_changed == InputsChanged::Refuse;
        let refusal =
            (refuse && !m.inputs_changed.is_empty()).then(|| manifest::refusal(&m.inputs_changed));
        if refusal.is_some() {
            // No supervisor will write it: the daemon does.
            self.write_manifest_file(run.id, &file);
        } else {
            rs.manifest = Some(file);
        }
        if !m.inputs_changed.is_empty() {
            self.inputs_changed_event(run, &m, refuse);
        }
        refusal
    }

    /// The `inputs-changed` event naming each input.
    fn inputs_changed_event(&self, run: &RunRow, m: &Manifest, refuse: bool) {
        let names: Vec<String> = m
            .inputs_changed
            .iter()
            .map(|c| format!("{} ({})", c.path.display(), c.what))
            .collect();
        let msg = format!(
            "{} input(s) changed since submit: {}{}",
            names.len(),
            names.join(", "),
            if refuse {
                "; the run is refused ([manifest] inputs_changed = \"refuse\")"
            } else {
                "; run anyway ([manifest] inputs_changed = \"warn\")"
            }
        );
        if let Err(e) =
            self.store()
                .note_event(Some(run.task_id), "inputs-changed", &msg, self.now_ms())
        {
            tracing::warn!(
                "run {}: cannot record its inputs-changed event: {e}",
                run.id
            );
        }
    }

    /// The run's GPUs as its manifest names them.
    fn gpu_record(&self, given: &[u32]) -> GpuRecord {
        let facts = self.watch.gpu_facts.clone();
        GpuRecord {
            driver: facts.driver,
            cuda: facts.cuda,
            devices: given
                .iter()
                .map(|&i| {
                    let g = facts.gpus.iter().find(|g| g.index == i);
                    GpuDevice {
                        index: i,
                        name: g.map(|g| g.name.clone()),
                        uuid: g.map(|g| g.uuid.clone()),
                    }
                })
                .collect(),
        }
    }

    /// `<run folder>/manifest.json` of a run no supervisor starts.
    pub(in crate::daemon) fn write_manifest_file(&self, run: i64, text: &str) {
        let rel = Path::new("runs").join(run.to_string()).join(FILE);
        if let Err(e) = self.state.write(&rel, text.as_bytes()) {
            tracing::warn!(
                "run {run}: cannot write {}: {e}",
                self.cfg.state_dir.join(&rel).display()
            );
        }
    }

    /// A submit manifest as shown: the task's spec, command and env filled
    /// in, secrets redacted.
    pub fn submit_view(&self, mut m: Manifest, spec: &TaskSpec) -> Manifest {
        let redactor = Redactor::new(&spec.env, &self.cfg.sandbox.redact_env);
        let mut shown = spec.clone();
        shown.env = redactor.env(&spec.env);
        m.command = spec
            .command
            .to_argv()
            .iter()
            .map(|a| redactor.text(a))
            .collect();
        m.env = shown.env.clone();
        m.spec = Some(shown);
        m
    }
}
