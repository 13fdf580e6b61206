//! The policy chain: the configured scheduling policies, each on a worker
//! thread of its own behind a watchdog, loaded, reloaded and called from the
//! scheduler thread only (never from the async runtime that serves the API).
//!
//! A trap, timeout, blocking call, stuck call or invalid answer is a failure
//! recorded with the plugin's name and cause; a plugin is disabled when it
//! fails `plugins.max_failures` of its last `plugins.failure_window` calls, or
//! spends more CPU in a minute than `plugins.cpu_budget`, until it is
//! reloaded. While a plugin fails or is disabled its `on_failure` applies:
//! `open` ignores it, `closed` starts nothing.

mod calls;
mod reload_apply;

use crate::daemon::MemberView;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, OnFailure};
use crate::plugins::engine::PluginEngine;
use crate::plugins::pass::Pass;
use crate::plugins::policy::{self as p, PluginError, PluginLimits};
use crate::plugins::version::Detected;
use crate::plugins::worker::Worker;

use crate::daemon::boot::startup::{StartError, named, startup_problem};
use crate::daemon::pipeline::combine::{self, ChainAnswer};
use crate::daemon::pipeline::health::Health;
use crate::daemon::pipeline::sources::{sha256, source_of};

/// One member of the chain.
pub struct Member {
    /// Its name in `plugins.chain`.
    pub name: String,
    /// `built-in` or the file it came from.
    pub source: String,
    /// What its failure means.
    pub on_failure: OnFailure,
    /// The running plugin (None when it failed to load or was abandoned).
    worker: Option<Arc<Worker>>,
    /// What its calls take, on average of late ([`Chain::share_work`]).
    cost: Duration,
    /// The component and config it runs, to start it again after a stuck call.
    loaded: Option<Loaded>,
    /// Disabled until reloaded.
    pub disabled: bool,
    /// Recent calls.
    pub health: Health,
    /// The last failure, for `plugins ls`.
    pub last_error: Option<String>,
    /// A fault in the config itself found at load (an unknown name, a config
    /// the plugin rejects): the daemon refuses to start with it.
    startup_problem: Option<String>,
}

/// What a member runs: its component, config, the component's sha256 and
/// the version of the contract it implements.
pub(in crate::daemon) struct Loaded {
    wasm: Arc<Vec<u8>>,
    config: String,
    sha256: String,
    version: Detected,
}

/// The configured chain.
pub struct Chain {
    members: Vec<Member>,
    urgent_bypass: Vec<String>,
    engine: Option<PluginEngine>,
    limits: PluginLimits,
    max_failures: u32,
    window: u32,
    cpu_budget: Duration,
    min_interval_ms: i64,
    /// Whether answers keep each policy's verdict and score part (what
    /// `why` and a start's message explain with); see [`Chain::explain`].
    explain: bool,
    /// The daemon's tariff, handed to every pass (the policies' `tariff` import).
    tariff: Arc<crate::tariff::Tariff>,
    /// Members run on the caller's thread ([`Chain::load_here`]).
    here: bool,
    /// A second thread that takes some of them each pass ([`Chain::share_work`]).
    helper: Option<crate::plugins::helper::Helper>,
    /// Member calls the helper has run ([`Chain::calls_handed`]).
    handed: u64,
}

/// Starts a worker for `name` (its config from `cfg`) from `wasm`.
pub(in crate::daemon) fn start_member(
    engine: Option<&PluginEngine>,
    limits: &PluginLimits,
    cfg: &Config,
    name: &str,
    wasm: Result<Vec<u8>, String>,
    here: bool,
) -> Result<(Worker, Loaded), StartError> {
    let entry = cfg.plugin.get(name).cloned().unwrap_or_default();
    let config = toml::to_string(&entry.config).unwrap_or_default();
    let engine = engine.ok_or_else(|| StartError::Source("no plugin engine".into()))?;
    let wasm = Arc::new(wasm.map_err(StartError::Source)?);
    let sha = sha256(&wasm);
    let worker = if here {
        Worker::here(engine, name, &wasm, &config, limits.clone())
    } else {
        Worker::start(engine, name, wasm.to_vec(), config.clone(), limits.clone())
    }
    .map_err(StartError::Plugin)?;
    let version = worker.version.clone();
    Ok((
        worker,
        Loaded {
            wasm,
            config,
            sha256: sha,
            version,
        },
    ))
}

impl Chain {
    /// Loads every plugin in `plugins.chain`. A plugin that fails to load is
    /// kept as failed (its on_failure applies) and says why in `plugins ls`.
    pub fn load(cfg: &Config, engine: Option<&PluginEngine>) -> Chain {
        Chain::load_on(cfg, engine, false)
    }

    /// Loads the chain with its members on the caller's thread: each call
    /// answers under its epoch deadline with no thread hand-off and no
    /// watchdog. For `nightjar simulate` and the daemon's forecasts (on a
    /// blocking thread of the API's, never the scheduler's), which ask at
    /// every event they play: a policy reaches no host call that can block,
    /// so the deadline alone ends any call, and the two wake-ups a call on
    /// a thread of its own costs were about a seventh of an `estimate`.
    /// (`simulate` then shares the calls with one helper thread:
    /// [`Chain::share_work`].)
    pub fn load_here(cfg: &Config, engine: Option<&PluginEngine>) -> Chain {
        Chain::load_on(cfg, engine, true)
    }

    fn load_on(cfg: &Config, engine: Option<&PluginEngine>, here: bool) -> Chain {
        let mut chain = Chain {
            members: Vec::new(),
            urgent_bypass: cfg.plugins.urgent_bypass.clone(),
            engine: engine.cloned(),
            limits: cfg.plugins.limits(),
            max_failures: cfg.plugins.max_failures,
            window: cfg.plugins.failure_window,
            cpu_budget: cfg.plugins.cpu_budget,
            min_interval_ms: cfg.plugins.min_pass_interval.as_millis() as i64,
            explain: true,
            tariff: Arc::new(cfg.tariff()),
            here,
            helper: None,
            handed: 0,
        };
        for name in &cfg.plugins.chain {
            let entry = cfg.plugin.get(name).cloned().unwrap_or_default();
            let (source, wasm) = source_of(cfg, name);
            let mut m = Member {
                name: name.clone(),
                source,
                on_failure: entry.on_failure,
                worker: None,
                cost: Duration::ZERO,
                loaded: None,
                disabled: true,
                health: Health::new(chain.max_failures, chain.window),
                last_error: None,
                startup_problem: None,
            };
            let missing = wasm.is_err() && m.source == "built-in";
            match start_member(chain.engine.as_ref(), &chain.limits, cfg, name, wasm, here) {
                Ok((worker, loaded)) => {
                    tracing::info!("policy {name} loaded ({})", m.source);
                    m.worker = Some(Arc::new(worker));
                    m.loaded = Some(loaded);
                    m.disabled = false;
                }
                Err(e) => {
                    let e_text = named(&m.source, &e);
                    tracing::error!("policy {name} did not load: {e_text}");
                    m.startup_problem = startup_problem(cfg, name, &e, missing);
                    m.last_error = Some(e_text);
                }
            }
            chain.members.push(m);
        }
        chain
    }

    /// The engine and limits a member is started with (for a reload that
    /// compiles off the scheduler thread).
    pub(in crate::daemon) fn starter(&self) -> (Option<PluginEngine>, PluginLimits) {
        (self.engine.clone(), self.limits.clone())
    }

    /// Faults in the config found at load, each naming the file, line and
    /// key: the daemon does not start with any.
    pub fn startup_problems(&self) -> Vec<String> {
        self.members
            .iter()
            .filter_map(|m| m.startup_problem.clone())
            .collect()
    }

    /// The plugin folder entries the chain would load, with their kind, size
    /// and modification time, to notice changes.
    pub fn fingerprint(cfg: &Config) -> Vec<Option<(u32, u64, std::time::SystemTime)>> {
        use std::os::unix::fs::MetadataExt;
        cfg.plugins
            .chain
            .iter()
            .map(|n| {
                let path = cfg.plugin_dir().join(format!("{n}.wasm"));
                let m = std::fs::symlink_metadata(&path).ok()?;
                let target = std::fs::metadata(&path).ok();
                let m = target.unwrap_or(m);
                Some((m.mode(), m.len(), m.modified().ok()?))
            })
            .collect()
    }

    /// Ends member `name`'s worker thread, as a panic in the host's side of
    /// a call would.
    #[cfg(test)]
    pub(in crate::daemon) fn end_worker(&mut self, name: &str) {
        for m in self.members.iter_mut().filter(|m| m.name == name) {
            m.worker = Some(Arc::new(Worker::ended(self.limits.clone())));
        }
    }

    /// The members' states.
    pub fn views(&self) -> Vec<MemberView> {
        self.members
            .iter()
            .map(|m| {
                let failures = m.health.failures() as u32;
                let state = if m.disabled {
                    "disabled"
                } else if failures > 0 {
                    "failing"
                } else if m.health.slow(self.limits.evaluate_timeout) {
                    "slow"
                } else {
                    "ok"
                };
                let last = m.health.last_failure.as_ref();
                MemberView {
                    name: m.name.clone(),
                    source: m.source.clone(),
                    sha256: m.loaded.as_ref().map(|l| l.sha256.clone()),
                    api_version: m.loaded.as_ref().map(|l| l.version.api.to_string()),
                    api_note: m.loaded.as_ref().and_then(|l| l.version.note()),
                    state: state.into(),
                    failure_rate: m.health.rate(),
                    failures,
                    on_failure: match m.on_failure {
                        OnFailure::Open => "open".into(),
                        OnFailure::Closed => "closed".into(),
                    },
                    last_error: m.last_error.clone(),
                    last_cause: last.map(|l| l.1.clone()),
                    last_failure_at: last.map(|l| l.2),
                    cpu_percent: m.health.cpu_percent(),
                }
            })
            .collect()
    }

    /// Whether answers from now on keep each policy's verdict and score
    /// part (`ChainAnswer::verdicts` and `parts`). The daemon always does;
    /// the simulator, which explains nothing, asks only when it compares two
    /// answers, and saves their text on every other pass.
    pub fn explain(&mut self, explain: bool) {
        self.explain = explain;
    }

    /// Runs every policy on `snapshot` (all at once: each on its thread in
    /// the daemon, or split between the caller's thread and a helper's, see
    /// [`Chain::share_work`]; sharing what the pass derives from the
    /// snapshot) and combines their answers, which each worker has checked
    /// against the snapshot.
    pub fn evaluate(&mut self, snapshot: Arc<p::Snapshot>, now: i64) -> ChainAnswer {
        let pass =
            Arc::new(Pass::new(Arc::clone(&snapshot)).with_tariff(Some(Arc::clone(&self.tariff))));
        let mut answer = ChainAnswer::default();
        // A member whose worker was abandoned starts again (its code is cached).
        for m in &mut self.members {
            if !m.disabled
                && m.worker.is_none()
                && let Some(loaded) = &m.loaded
                && let Some(engine) = &self.engine
            {
                let (name, limits) = (&m.name, self.limits.clone());
                let started = if self.here {
                    Worker::here(engine, name, &loaded.wasm, &loaded.config, limits)
                } else {
                    Worker::start(
                        engine,
                        name,
                        loaded.wasm.to_vec(),
                        loaded.config.clone(),
                        limits,
                    )
                };
                match started {
                    Ok(w) => m.worker = Some(Arc::new(w)),
                    Err(e) => m.last_error = Some(format!("{e} ({})", e.cause())),
                }
            }
        }
        let reports = self.call_members(&pass);
        let mut answers = Vec::new();
        for (m, report) in self.members.iter_mut().zip(reports) {
            let result = match report {
                Some(report) => {
                    answer.calls.push((m.name.clone(), report.wall));
                    if report.ended {
                        // Started again at the next pass, from its cached
                        // code. A stuck thread is never joined: it ends on
                        // its own if the call returns.
                        m.worker = None;
                    }
                    let mut result = report.result;
                    if let Some(cpu) = m.health.spend(report.cpu, report.wall, self.cpu_budget)
                        && result.is_ok()
                    {
                        result = Err(PluginError::Invalid(format!(
                            "used {:.1} s of CPU in a minute, over plugins.cpu_budget ({:.1} s)",
                            cpu.as_secs_f64(),
                            self.cpu_budget.as_secs_f64()
                        )));
                    }
                    result
                }
                None if m.disabled => Err(PluginError::Trap(
                    m.last_error.clone().unwrap_or_else(|| "disabled".into()),
                )),
                None => Err(PluginError::Trap(
                    m.last_error
                        .clone()
                        .unwrap_or_else(|| "did not load".into()),
                )),
            };
            let was_disabled = m.disabled;
            match result {
                Ok(e) => {
                    m.health.record(false);
                    answers.push((m.name.clone(), e));
                }
                Err(e) => {
                    if !was_disabled {
                        let over = m.health.record(true);
                        let cause = e.cause();
                        m.last_error = Some(format!("{e} ({cause})"));
                        m.health.last_failure = Some((e.to_string(), cause.into(), now));
                        let mut msg = format!("policy {} failed ({cause}): {e}", m.name);
                        if over {
                            m.disabled = true;
                            msg.push_str(&format!(
                                "; disabled after {} failures in its last calls until it is reloaded",
                                m.health.rate()
                            ));
                        }
                        answer.failures.push((m.name.clone(), msg));
                    }
                    if m.on_failure == OnFailure::Closed {
                        answer.hold_all = Some(format!(
                            "policy {} is failing and its on_failure is closed",
                            m.name
                        ));
                    }
                }
            }
        }
        combine::combine(
            &mut answer,
            answers,
            &snapshot,
            &self.urgent_bypass,
            self.min_interval_ms,
            self.explain,
        );
        answer
    }
}
