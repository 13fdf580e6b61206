//! A run's end, judged before it is recorded: the supervisor's class, then
//! the task's validators over its outputs, then the store's transaction
//! (class, findings, the task's next state by the retry rules). Blocking:
//! called on a blocking thread, never on the runtime's.

use std::path::PathBuf;

use nightjar_core::api::findings::{Finding, Severity};

use crate::config::OnFailure;
use crate::daemon::state::Daemon;
use crate::plugins::engine::PluginEngine;
use crate::plugins::validator::{RunFacts, Validators};
use crate::postrun::{self, validate};
use crate::store::{Finished, RunClass, RunEnd, RunOutcome};
use nightjar_core::api::wire::RunGpuRecord;

impl Daemon {
    /// The result validators, made on first use (an engine of their own, so
    /// a daemon with no validator never starts one).
    pub(crate) fn validators(&self) -> Result<&std::sync::Arc<Validators>, String> {
        self.runs
            .validators
            .get_or_init(|| {
                let engine = PluginEngine::new(Some(self.cfg.plugin_cache_dir()))
                    .map_err(|e| format!("cannot start the plugin engine for validators: {e:#}"))?;
                let limits = crate::plugins::limits::PluginLimits {
                    evaluate_timeout: self.cfg.validators.timeout,
                    memory: self.cfg.validators.memory_limit.as_u64() as usize,
                    ..self.cfg.plugins.limits()
                };
                Ok(std::sync::Arc::new(Validators::new(engine, limits)))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Compiles, ahead of their runs' ends, the validators the tasks in
    /// `entries` will be judged by (theirs and their projects'), each as
    /// its task's owner reads it.
    pub(crate) fn warm_validators(&self, entries: &[crate::task::model::NewEntry]) {
        let mut seen = std::collections::HashSet::new();
        for spec in entries.iter().flat_map(|e| &e.members) {
            let project = self.cfg.project_validators.get(&spec.project);
            for r in spec.validate.iter().chain(project.into_iter().flatten()) {
                if !seen.insert((r.plugin.clone(), spec.owner.as_ref().map(|o| o.uid))) {
                    continue;
                }
                let (Ok(v), Ok(who)) = (
                    self.validators(),
                    crate::privsep::identity(spec.owner.as_ref()),
                ) else {
                    continue;
                };
                v.warm(&r.plugin, who);
            }
        }
    }

    /// For a gpu-oom: each GPU the run had, its peak and what is free on it
    /// now (`GPU 0 (A100): peak 79.1G, 0.9G of 80.0G free now`).
    fn gpu_oom_note(&self, records: &[RunGpuRecord]) -> Option<String> {
        if records.is_empty() {
            return None;
        }
        let views = self.gpu_views();
        let size = |b: u64| bytesize::ByteSize::b(b).display().iec_short().to_string();
        let parts: Vec<String> = records
            .iter()
            .map(|r| {
                let view = views.iter().find(|v| v.index == r.gpu);
                let name = view.map(|v| v.name.as_str()).unwrap_or("?");
                let free = view.and_then(|v| {
                    let total = v.mem_total?;
                    Some(format!(
                        ", {} of {} free now",
                        size(total.saturating_sub(v.mem_used?)),
                        size(total)
                    ))
                });
                format!(
                    "GPU {} ({name}): the run peaked at {}{}",
                    r.gpu,
                    size(r.mem_peak),
                    free.unwrap_or_default()
                )
            })
            .collect();
        Some(parts.join("; "))
    }

    /// Judges run `run`'s end and records it with what its validators found
    /// and `records` (its GPU records, for the peak a gpu-oom retry needs).
    /// `Ok(None)` when it was already recorded.
    pub(in crate::daemon) fn conclude(
        &self,
        run: i64,
        out: &RunOutcome,
        records: &[RunGpuRecord],
    ) -> crate::store::Result<Option<Finished>> {
        let ctx = self.store().end_context(run)?;
        if !ctx.running {
            return Ok(None);
        }
        let spec = &ctx.spec;
        let mut refs = spec.validate.clone();
        if let Some(project) = self.cfg.project_validators.get(&spec.project) {
            refs.extend(project.iter().cloned());
        }
        let mut walked = None;
        // Whom the run's outputs are read as (its owner; none: the daemon's user).
        let who = crate::privsep::identity(spec.owner.as_ref());
        let findings: Vec<Finding> = if out.class == RunClass::Ok && !refs.is_empty() {
            let facts = RunFacts {
                task: ctx.task,
                run,
                attempt: ctx.attempt,
                name: spec.name.clone(),
                project: spec.project.clone(),
                exit_code: out.exit_code,
                class: out.class.as_str().into(),
                duration_ms: out.finished_at.saturating_sub(ctx.started_at).max(0) as u64,
                ..RunFacts::default()
            };
            let fail_open = self.cfg.validators.on_failure == OnFailure::Open;
            match self.validators().and_then(|v| Ok((v, who.clone()?))) {
                Ok((v, who)) => {
                    let j = validate::judge(
                        v,
                        &refs,
                        facts,
                        ctx.output.as_deref(),
                        &ctx.run_dir,
                        fail_open,
                        who.as_ref(),
                    );
                    tracing::debug!(
                        "run {run}: manifest {} ms, validators {} ms, {} finding(s)",
                        j.manifest_ms,
                        j.validators_ms,
                        j.findings.len()
                    );
                    walked = j.walked;
                    j.findings
                }
                Err(e) => vec![Finding {
                    validator: validate::HOST.into(),
                    severity: if fail_open {
                        Severity::Warning
                    } else {
                        Severity::Error
                    },
                    path: None,
                    message: e,
                }],
            }
        } else {
            Vec::new()
        };
        let mut out = postrun::after_validation(out.clone(), &findings);
        if out.class == RunClass::GpuOom
            && let Some(note) = self.gpu_oom_note(records)
        {
            out.message = Some(match out.message {
                Some(m) => format!("{m}; {note}"),
                None => note,
            });
        }
        let disks: Vec<PathBuf> = if out.class == RunClass::DiskFull {
            std::iter::once(spec.workdir.clone())
                .chain(ctx.output.clone())
                .collect()
        } else {
            Vec::new()
        };
        let outputs = (out.class == RunClass::Ok)
            .then(|| self.output_manifest(run, ctx.output.as_deref(), walked, who.as_ref()))
            .flatten();
        let end = RunEnd {
            outputs: outputs.as_ref(),
            archive_root: self.cfg.archive.root_for(&spec.project),
            outcome: &out,
            findings: &findings,
            gpu_peak: records.iter().map(|r| r.mem_peak).max(),
            disks: &disks,
            disk_free: self.cfg.classes.disk_free.as_u64(),
        };
        let finished = self.store().end_run(run, &end)?;
        if finished.is_some() {
            self.metrics.run_ended(out.class.as_str(), &spec.project);
        }
        Ok(finished)
    }
}
