//! Result validators: components of the `result-validator` world of contract
//! 0.2. Each validation gets a fresh instance in a fresh store whose only
//! file system is the run's output folder, read-only, at `/output` (a WASI
//! preopen on a directory handle: no `..`, no absolute path, no symbolic
//! link leading out). The limits are the policies': an epoch deadline, a
//! memory cap over all memories and tables, bounded answers, no network, no
//! clock, no blocking import, and a watchdog thread.

mod gate;
mod registry;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nightjar_core::api::findings::{Finding, Severity};
use wasmtime::Store;
use wasmtime::component::{Linker, ResourceTable};

use super::engine::PluginEngine;
use super::limits::{MAX_HOST_RESOURCES, MAX_LOG_MESSAGE, PluginLimits, TotalLimiter, printable};
use super::policy::{PluginError, classify};
use super::sink::{LogBudget, LogSink};
use super::state::PluginState;
use super::wasi::SeededRng;
use crate::sandbox::files::RunAs;

pub use registry::{ValidatorRef, Validators};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/nightjar-plugin@0.2.3",
        world: "result-validator",
        with: {
            "nightjar:plugin/types": crate::plugins::v0_2::nightjar::plugin::types,
            "nightjar:plugin/host": crate::plugins::v0_2::nightjar::plugin::host,
        },
    });
}

use bindings::exports::nightjar::plugin::validate as wire;

/// Findings kept from one validator's answer.
pub const MAX_FINDINGS: usize = 100;

/// Bytes a validator's answer may hand the host (its findings' text):
/// room for a few thousand findings; a larger answer fails the validation.
const MAX_ANSWER: usize = 4 << 20;

/// Bytes of a run's stderr a validator is shown.
pub const STDERR_TAIL: usize = 4 << 10;

/// A regular file of a run's output folder, as the host hashed it.
pub use nightjar_core::api::outputs::OutputFile;

/// What a validator is told about the run it judges.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// Task id.
    pub task: i64,
    /// Run id.
    pub run: i64,
    /// Attempt, from 1.
    pub attempt: u32,
    /// Task name.
    pub name: String,
    /// Project.
    pub project: String,
    /// Exit status.
    pub exit_code: Option<i32>,
    /// The class the host gave the end (`ok`).
    pub class: String,
    /// From start to end, ms.
    pub duration_ms: u64,
    /// The output folder's regular files, by path.
    pub files: Vec<OutputFile>,
    /// Files left out of `files` (over the cap).
    pub files_omitted: u32,
    /// The end of the run's stderr.
    pub stderr_tail: String,
}

/// A result validator, compiled and linked once, instantiated per run.
pub struct ValidatorPlugin {
    /// The name findings carry (`outputs`, or a file's stem).
    pub name: String,
    /// sha256 of the component.
    pub sha256: String,
    /// The contract version it exports its interface at (`0.2.3`, or an
    /// earlier 0.2.x for components built before 0.2.3).
    pub contract: String,
    engine: PluginEngine,
    pre: bindings::ResultValidatorPre<PluginState>,
    limits: PluginLimits,
    log_budget: LogBudget,
}

impl ValidatorPlugin {
    /// Compiles (or loads from the engine's cache) `wasm` and links it as a
    /// result validator: a component that is not one is
    /// [`PluginError::NotValidator`].
    pub fn load(
        engine: &PluginEngine,
        name: &str,
        wasm: &[u8],
        limits: PluginLimits,
    ) -> Result<ValidatorPlugin, PluginError> {
        let component = engine.component(wasm)?;
        let not_one = |e: wasmtime::Error| {
            PluginError::NotValidator(format!(
                "{e:#} (a validator exports nightjar:plugin/validate@0.2.x; build it with nightjar_sdk::export_validator!)"
            ))
        };
        let mut linker: Linker<PluginState> = Linker::new(&engine.engine);
        super::wasi::add_to_linker(&mut linker).map_err(not_one)?;
        bindings::ResultValidator::add_to_linker::<_, wasmtime::component::HasSelf<_>>(
            &mut linker,
            |s| s,
        )
        .map_err(not_one)?;
        let pre = linker.instantiate_pre(&component).map_err(not_one)?;
        let pre = bindings::ResultValidatorPre::new(pre).map_err(not_one)?;
        let sha256 = super::sha256(wasm);
        let contract =
            super::version::exported_at(&engine.engine, &component, "nightjar:plugin/validate")
                .unwrap_or_else(|| super::version::ApiVersion::LATEST.to_string());
        Ok(ValidatorPlugin {
            name: name.to_string(),
            sha256,
            contract,
            engine: engine.clone(),
            pre,
            log_budget: LogBudget::new(name, limits.log_bytes_per_minute),
            limits,
        })
    }

    /// Judges one run on a fresh instance, under the watchdog: `configure`
    /// with `config`, then `validate`. `output` is the folder shown at
    /// `/output`, opened on the call's thread as `who` (the task's owner;
    /// `None`: the daemon's own user): the validator reads what they could
    /// read, through a real folder opened once.
    pub fn validate(
        self: &Arc<Self>,
        config: &str,
        facts: &RunFacts,
        output: Option<&Path>,
        who: Option<&RunAs>,
    ) -> Result<Vec<Finding>, PluginError> {
        let me = Arc::clone(self);
        let (config, facts, output, who) = (
            config.to_string(),
            facts.clone(),
            output.map(Path::to_path_buf),
            who.cloned(),
        );
        let watchdog =
            PluginLimits::watchdog(self.limits.configure_timeout + self.limits.evaluate_timeout);
        super::worker::contained(
            super::worker::Budget::owner(
                super::worker::Kind::Validator,
                who.as_ref().map(|w| w.uid),
            ),
            &self.name,
            watchdog,
            move || {
                if let Some(w) = &who {
                    // A thread of its own, that ends with the call.
                    crate::privsep::become_owner(w).map_err(PluginError::Trap)?;
                }
                me.call(&config, Some(&facts), output.as_deref())
            },
        )
    }

    /// Instantiates it and runs only `configure(config)`, under the
    /// watchdog: what `plugins check --plugin-config` asks.
    pub fn configure(self: &Arc<Self>, config: &str) -> Result<(), PluginError> {
        let (me, config) = (Arc::clone(self), config.to_string());
        let watchdog = PluginLimits::watchdog(self.limits.configure_timeout);
        super::worker::contained(
            super::worker::Budget::daemon(super::worker::Kind::Validator),
            &self.name,
            watchdog,
            move || me.call(&config, None, None).map(|_| ()),
        )
    }

    /// Configures a fresh instance and, given `facts`, validates them.
    fn call(
        &self,
        config: &str,
        facts: Option<&RunFacts>,
        output: Option<&Path>,
    ) -> Result<Vec<Finding>, PluginError> {
        let sink = LogSink::default();
        let rng = SeededRng::default();
        rng.seed(facts.map_or(0, |f| f.run as u64));
        let wasi = super::wasi::validator_context(&sink, &rng, output).map_err(|e| {
            PluginError::Trap(format!(
                "cannot open the output folder for the validator: {e:#}"
            ))
        })?;
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HOST_RESOURCES);
        let state = PluginState {
            name: self.name.clone(),
            wasi,
            table,
            limits: TotalLimiter::new(self.limits.memory),
            log_lines: self.limits.log_lines,
            log_budget: self.log_budget.clone(),
            rng,
            http: None,
            mail: None,
            tariff: None,
            tariff_spans: Default::default(),
        };
        let mut store = Store::new(&self.engine.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_hostcall_fuel(MAX_ANSWER);
        let total = self.limits.configure_timeout + self.limits.evaluate_timeout;
        store.set_epoch_deadline(PluginEngine::ticks(total));
        let run = facts.map(wire_run);
        let answer = self.engine.with_deadline(|| {
            let live = self.pre.instantiate(&mut store)?;
            let v = live.nightjar_plugin_validate();
            if let Err(e) = v.call_configure(&mut store, config)? {
                return Ok(Err(e));
            }
            Ok::<_, wasmtime::Error>(Ok(match &run {
                Some(run) => Some(v.call_validate(&mut store, run)?),
                None => None,
            }))
        });
        sink.to_log(&self.name, &self.log_budget, &[]);
        match answer {
            Ok(Ok(Some(validation))) => Ok(self.read(validation)),
            Ok(Ok(None)) => Ok(Vec::new()),
            Ok(Err(e)) => Err(PluginError::Config {
                key: e.key.map(|k| printable(&k, MAX_LOG_MESSAGE)),
                message: printable(&e.message, MAX_LOG_MESSAGE),
            }),
            Err(e) => Err(classify(e, total, self.limits.memory)),
        }
    }

    /// The host's findings from the plugin's answer: at most
    /// [`MAX_FINDINGS`], text cut to 1 KiB with control characters escaped.
    fn read(&self, v: wire::Validation) -> Vec<Finding> {
        let n = v.findings.len();
        let mut out: Vec<Finding> = v
            .findings
            .into_iter()
            .take(MAX_FINDINGS)
            .map(|f| Finding {
                validator: self.name.clone(),
                severity: match f.severity {
                    wire::Severity::Info => Severity::Info,
                    wire::Severity::Warning => Severity::Warning,
                    wire::Severity::Error => Severity::Error,
                },
                path: f.path.map(|p| printable(&p, MAX_LOG_MESSAGE)),
                message: printable(&f.message, MAX_LOG_MESSAGE),
            })
            .collect();
        if n > MAX_FINDINGS {
            out.push(Finding {
                validator: self.name.clone(),
                severity: Severity::Info,
                path: None,
                message: format!("{} more findings not kept", n - MAX_FINDINGS),
            });
        }
        out
    }
}

fn wire_run(f: &RunFacts) -> wire::Run {
    wire::Run {
        task: f.task,
        run: f.run,
        attempt: f.attempt,
        name: f.name.clone(),
        project: f.project.clone(),
        exit_code: f.exit_code,
        class: f.class.clone(),
        duration: f.duration_ms,
        files: f
            .files
            .iter()
            .map(|o| wire::OutputFile {
                path: o.path.clone(),
                size: o.size,
                sha256: o.sha256.clone(),
            })
            .collect(),
        files_omitted: f.files_omitted,
        stderr_tail: f.stderr_tail.clone(),
    }
}

/// The name a validator file's findings carry: its stem.
pub fn name_of(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| PathBuf::from(path).display().to_string())
}
