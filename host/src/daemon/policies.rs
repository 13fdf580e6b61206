//! The policy chain in the daemon: loading the configured scheduling
//! policies, building one snapshot per pass, and combining their answers.
//!
//! Combination rules: a task may start when no policy defers or rejects it;
//! eligible tasks start in order of their summed scores, then by age (submit
//! time). A reject fails the task with the policy's reason. A trap, timeout
//! or invalid answer is recorded as an event with the plugin's name and
//! cause; after `plugins.max_failures` consecutive failures the plugin is
//! disabled until it is reloaded. While a plugin fails or is disabled,
//! its `on_failure` applies: `open` ignores it, `closed` starts nothing.
//! Urgent tasks bypass the deferrals of the policies in `plugins.urgent_bypass`.

use std::collections::HashMap;

use chrono::{Offset, TimeZone};

use crate::config::{Config, OnFailure};
use crate::plugins::engine::PluginEngine;
use crate::plugins::policy::{self as p, PluginError, PluginLimits, PolicyPlugin};
use crate::plugins::validate;
use crate::store::{Candidate, RunningInfo, UsageInfo};
use crate::task::model::Priority;

/// One member of the chain.
pub struct Member {
    /// Its name in `plugins.chain`.
    pub name: String,
    /// `built-in` or the file it came from.
    pub source: String,
    /// What its failure means.
    pub on_failure: OnFailure,
    /// The loaded plugin (None when it failed to load).
    plugin: Option<PolicyPlugin>,
    /// Consecutive failures.
    pub failures: u32,
    /// Disabled after too many failures.
    pub disabled: bool,
    /// The last failure, for `plugins ls`.
    pub last_error: Option<String>,
}

/// A member's state, as `nightjar plugins ls` shows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MemberView {
    /// Name.
    pub name: String,
    /// Where it came from.
    pub source: String,
    /// sha256 of the component.
    pub sha256: Option<String>,
    /// `ok`, `failing` or `disabled`.
    pub state: String,
    /// Consecutive failures.
    pub failures: u32,
    /// `open` or `closed`.
    pub on_failure: String,
    /// The last failure.
    pub last_error: Option<String>,
}

/// The configured chain.
pub struct Chain {
    /// The verdicts last stored, so only changes are written.
    pub stored_verdicts: HashMap<(i64, String), (String, String)>,
    /// Per GPU, the policies that closed it in the last pass.
    pub closed_by: HashMap<u32, Vec<String>>,
    members: Vec<Member>,
    max_failures: u32,
    urgent_bypass: Vec<String>,
    engine: Option<PluginEngine>,
    limits: PluginLimits,
}

/// Where plugin `name` comes from: `<plugins.dir>/NAME.wasm`, else a built-in.
fn source_of(cfg: &Config, name: &str) -> (String, Result<Vec<u8>, String>) {
    let file = cfg.plugin_dir().join(format!("{name}.wasm"));
    if file.is_file() {
        let bytes = std::fs::read(&file).map_err(|e| format!("read {}: {e}", file.display()));
        return (file.display().to_string(), bytes);
    }
    let builtin = crate::plugins::first_party::FIRST_PARTY
        .iter()
        .find(|(n, _)| *n == name);
    (
        "built-in".to_string(),
        builtin
            .map(|(_, w)| w.to_vec())
            .ok_or_else(|| format!("no {} and no built-in plugin of that name", file.display())),
    )
}

/// How the chain judged one task.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    /// May start, with this summed score.
    Eligible(i64),
    /// Waits: why.
    Deferred(String),
    /// Fails: why.
    Rejected(String),
}

/// The chain's answer for one pass.
#[derive(Debug, Default)]
pub struct ChainAnswer {
    /// Per task (tasks not listed are eligible with score 0).
    pub judgements: HashMap<i64, Judgement>,
    /// GPUs closed to new work this pass, with the reason.
    pub closed_gpus: HashMap<u32, String>,
    /// A failing `closed` plugin: start nothing this pass.
    pub hold_all: Option<String>,
    /// Failures to record: (plugin, message).
    pub failures: Vec<(String, String)>,
    /// The earliest `until` of a deferral.
    pub wake_at: Option<i64>,
    /// Each eligible task's score, policy by policy.
    pub parts: HashMap<i64, Vec<(String, i32)>>,
    /// Preemption requests: (task, reason).
    pub preempt: Vec<(i64, String)>,
    /// Each policy's verdict per task this pass: (task, plugin) -> (verdict, reason).
    pub verdicts: HashMap<(i64, String), (String, String)>,
}

impl Chain {
    /// Loads every plugin in `plugins.chain`. A plugin that fails to load is
    /// kept as failed (its on_failure applies) and says why in `plugins ls`.
    pub fn load(cfg: &Config, engine: Option<&PluginEngine>) -> Chain {
        let limits = PluginLimits {
            evaluate_timeout: cfg.plugins.evaluate_timeout,
            memory: cfg.plugins.memory_limit.as_u64() as usize,
            ..PluginLimits::default()
        };
        let mut chain = Chain {
            stored_verdicts: HashMap::new(),
            closed_by: HashMap::new(),
            members: Vec::new(),
            max_failures: cfg.plugins.max_failures.max(1),
            urgent_bypass: cfg.plugins.urgent_bypass.clone(),
            engine: engine.cloned(),
            limits,
        };
        for name in &cfg.plugins.chain {
            let entry = cfg.plugin.get(name).cloned().unwrap_or_default();
            let (source, wasm) = source_of(cfg, name);
            let mut m = Member {
                name: name.clone(),
                source,
                on_failure: entry.on_failure,
                plugin: None,
                failures: 0,
                disabled: true,
                last_error: None,
            };
            match chain.compile(cfg, name, wasm) {
                Ok(plugin) => {
                    tracing::info!("policy {name} loaded ({})", m.source);
                    m.plugin = Some(plugin);
                    m.disabled = false;
                }
                Err(e) => {
                    tracing::error!("policy {name} did not load: {e}");
                    m.last_error = Some(e);
                }
            }
            chain.members.push(m);
        }
        chain
    }

    fn compile(
        &self,
        cfg: &Config,
        name: &str,
        wasm: Result<Vec<u8>, String>,
    ) -> Result<PolicyPlugin, String> {
        let entry = cfg.plugin.get(name).cloned().unwrap_or_default();
        let config = toml::to_string(&entry.config).unwrap_or_default();
        let engine = self.engine.as_ref().ok_or("no plugin engine")?;
        PolicyPlugin::load(engine, name, &wasm?, &config, self.limits.clone())
            .map_err(|e| e.to_string())
    }

    /// Re-reads every member's file: a new or changed component is compiled
    /// and checked (world, config) before it replaces the old one; a bad one
    /// leaves the old one running and says why. Disabled members get a fresh
    /// start. Returns what changed, one line each.
    pub fn reload(&mut self, cfg: &Config) -> Vec<String> {
        let mut changes = Vec::new();
        for i in 0..self.members.len() {
            let name = self.members[i].name.clone();
            let (source, wasm) = source_of(cfg, &name);
            let sha = wasm.as_ref().ok().map(|w| {
                use sha2::Digest;
                sha2::Sha256::digest(w)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            });
            let m = &self.members[i];
            let same = m.plugin.as_ref().map(|p| &p.sha256) == sha.as_ref() && m.source == source;
            if same && !m.disabled {
                continue;
            }
            match self.compile(cfg, &name, wasm) {
                Ok(plugin) => {
                    let m = &mut self.members[i];
                    m.plugin = Some(plugin);
                    m.source = source;
                    m.disabled = false;
                    m.failures = 0;
                    m.last_error = None;
                    changes.push(format!("policy {name}: loaded ({})", m.source));
                }
                Err(e) => {
                    let m = &mut self.members[i];
                    let kept = if m.plugin.is_some() {
                        "; the previous version keeps running"
                    } else {
                        ""
                    };
                    m.last_error = Some(format!("new version rejected: {e}{kept}"));
                    changes.push(format!("policy {name}: new version rejected: {e}{kept}"));
                }
            }
        }
        changes
    }

    /// The files the chain would load, with their modification times, to
    /// notice changes in the plugin folder.
    pub fn fingerprint(cfg: &Config) -> Vec<Option<std::time::SystemTime>> {
        cfg.plugins
            .chain
            .iter()
            .map(|n| {
                std::fs::metadata(cfg.plugin_dir().join(format!("{n}.wasm")))
                    .and_then(|m| m.modified())
                    .ok()
            })
            .collect()
    }

    /// No policies: the built-in order alone.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The members' states.
    pub fn views(&self) -> Vec<MemberView> {
        self.members
            .iter()
            .map(|m| MemberView {
                name: m.name.clone(),
                source: m.source.clone(),
                sha256: m.plugin.as_ref().map(|p| p.sha256.clone()),
                state: if m.disabled {
                    "disabled".into()
                } else if m.failures > 0 {
                    "failing".into()
                } else {
                    "ok".into()
                },
                failures: m.failures,
                on_failure: match m.on_failure {
                    OnFailure::Open => "open".into(),
                    OnFailure::Closed => "closed".into(),
                },
                last_error: m.last_error.clone(),
            })
            .collect()
    }

    /// Runs every policy on `snapshot` and combines their answers.
    pub fn evaluate(&mut self, snapshot: &p::Snapshot) -> ChainAnswer {
        let mut answer = ChainAnswer::default();
        let mut answers: Vec<(String, p::Evaluation)> = Vec::new();
        // Every live policy evaluates at once (each has its own store), so a
        // chain costs about its slowest member, not the sum.
        let mut live: Vec<&mut PolicyPlugin> = self
            .members
            .iter_mut()
            .filter(|m| !m.disabled)
            .filter_map(|m| m.plugin.as_mut())
            .collect();
        let mut results = crate::plugins::policy::evaluate_all(&mut live, snapshot).into_iter();
        for m in &mut self.members {
            let result = match (&m.plugin, m.disabled) {
                (Some(_), false) => results
                    .next()
                    .unwrap_or_else(|| Err(PluginError::Trap("no result".into())))
                    .and_then(|e| validate::check(snapshot, &e).map(|_| e)),
                _ => Err(PluginError::Trap(
                    m.last_error.clone().unwrap_or_else(|| "disabled".into()),
                )),
            };
            match result {
                Ok(e) => {
                    m.failures = 0;
                    answers.push((m.name.clone(), e));
                }
                Err(e) => {
                    if !m.disabled {
                        m.failures += 1;
                        m.last_error = Some(format!("{} ({})", e, e.cause()));
                        let mut msg = format!("policy {} failed ({}): {e}", m.name, e.cause());
                        if m.failures >= self.max_failures {
                            m.disabled = true;
                            msg.push_str(&format!(
                                "; disabled after {} consecutive failures until it is reloaded",
                                m.failures
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
        let mut closed_by: HashMap<u32, Vec<String>> = HashMap::new();
        let urgent: std::collections::HashSet<i64> = snapshot
            .queue
            .iter()
            .filter(|t| t.priority == p::Priority::Urgent)
            .map(|t| t.id)
            .collect();
        for (name, e) in answers {
            for v in &e.verdicts {
                let (kind, reason) = match &v.verdict {
                    p::Verdict::Allow(s) => ("allow".to_string(), format!("score {s}")),
                    p::Verdict::Defer(d) => ("defer".to_string(), d.reason.clone()),
                    p::Verdict::Reject(r) => ("reject".to_string(), r.clone()),
                };
                answer
                    .verdicts
                    .insert((v.task, name.clone()), (kind, reason));
            }
            for v in e.verdicts {
                let j = answer
                    .judgements
                    .entry(v.task)
                    .or_insert(Judgement::Eligible(0));
                match v.verdict {
                    p::Verdict::Allow(score) => {
                        if let Judgement::Eligible(s) = j {
                            *s += score as i64;
                            answer
                                .parts
                                .entry(v.task)
                                .or_default()
                                .push((name.clone(), score));
                        }
                    }
                    p::Verdict::Defer(_)
                        if self.urgent_bypass.contains(&name) && urgent.contains(&v.task) => {}
                    p::Verdict::Defer(d) => {
                        if let Some(until) = d.until {
                            answer.wake_at =
                                Some(answer.wake_at.map_or(until, |w: i64| w.min(until)));
                        }
                        if let Judgement::Eligible(_) = j {
                            *j = Judgement::Deferred(format!("deferred by {name}: {}", d.reason));
                        }
                    }
                    p::Verdict::Reject(r) => {
                        *j = Judgement::Rejected(format!("rejected by {name}: {r}"))
                    }
                }
            }
            for g in &e.closed_gpus {
                closed_by.entry(g.index).or_default().push(name.clone());
            }
            for g in e.closed_gpus {
                answer
                    .closed_gpus
                    .entry(g.index)
                    .or_insert(format!("closed by {name}: {}", g.reason));
            }
            for pre in e.preempt {
                answer
                    .preempt
                    .push((pre.task, format!("preempted by {name}: {}", pre.reason)));
            }
        }
        self.closed_by = closed_by;
        answer
    }
}

/// Runs `f` on a thread outside the async runtime: WASI's blocking host
/// calls (a guest writing to stdout) start a runtime of their own, which must
/// not happen on the runtime's own thread.
pub fn off_runtime<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// The plugin-facing priority.
fn priority(p: Priority) -> p::Priority {
    match p {
        Priority::Low => p::Priority::Low,
        Priority::Normal => p::Priority::Normal,
        Priority::High => p::Priority::High,
        Priority::Urgent => p::Priority::Urgent,
    }
}

/// Builds the snapshot a pass hands to the chain.
pub fn snapshot(
    cfg: &Config,
    now: i64,
    queue: &[Candidate],
    running: &[RunningInfo],
    gpus: Vec<p::Gpu>,
    usage: &[UsageInfo],
) -> p::Snapshot {
    let tz = cfg.tz();
    let offset = tz
        .offset_from_utc_datetime(&crate::time::to_utc(now).naive_utc())
        .fix()
        .local_minus_utc();
    p::Snapshot {
        now,
        time_zone: cfg.timezone.clone(),
        utc_offset: offset,
        queue: queue
            .iter()
            .map(|c| {
                let r = &c.spec.resources;
                p::QueuedTask {
                    id: c.id,
                    name: c.spec.name.clone(),
                    project: c.spec.project.clone(),
                    priority: priority(c.spec.priority),
                    resources: p::Resources {
                        gpus: r.gpus,
                        gpu_mem: r.gpu_mem.map(|m| m.as_u64()),
                        cpus: r.cpus,
                        mem: r.mem.map(|m| m.as_u64()),
                        timeout: r.timeout.map(|t| t.as_millis() as u64),
                    },
                    submitted_at: c.submitted_at,
                    eligible_at: c.eligible_at,
                    attempts: c.attempts.max(0) as u32,
                    estimated_runtime: r.timeout.map(|t| t.as_millis() as u64),
                }
            })
            .collect(),
        running: running
            .iter()
            .map(|t| p::RunningTask {
                id: t.id,
                name: t.name.clone(),
                project: t.project.clone(),
                priority: priority(t.priority),
                gpus: t.gpus.clone(),
                started_at: t.started_at,
                preemptible: t.preemptible,
            })
            .collect(),
        gpus,
        usage: usage
            .iter()
            .map(|u| p::Usage {
                project: u.project.clone(),
                gpus: u.gpus,
                started_at: u.started_at,
                ended_at: u.ended_at,
            })
            .collect(),
    }
}

impl super::core::Daemon {
    /// A scheduling pass through the policy chain. True when something started.
    pub(super) fn policy_pass(self: &std::sync::Arc<Self>) -> anyhow::Result<bool> {
        use super::core::lock;
        let now = crate::time::now_ms();
        let running = self.store().running_tasks()?;
        // With every slot taken, a pass can still preempt; without a
        // preemptible run there is nothing to decide.
        if lock(&self.pool).slots == 0 && !running.iter().any(|r| r.preemptible) {
            return Ok(false);
        }
        let queue = self
            .store()
            .candidates(now, self.cfg.plugins.max_queue, 0)?;
        if queue.is_empty() {
            return Ok(false);
        }
        let usage = self.store().usage_since(now - 7 * 86_400_000)?;
        let closed_by = lock(&self.chain).closed_by.clone();
        let gpus = self
            .gpu_views()
            .into_iter()
            .map(|g| p::Gpu {
                index: g.index,
                uuid: g.uuid,
                name: g.name,
                mem_total: g.mem_total.unwrap_or(0),
                mem_used: g.mem_used.unwrap_or(0),
                mem_reserved: g.mem_reserved,
                util: g.util.unwrap_or(0),
                temperature: g.temp_c.unwrap_or(0),
                power: g.power_w.map(|w| (w * 1000.0) as u32).unwrap_or(0),
                healthy: g.healthy,
                closed_by: closed_by.get(&g.index).cloned().unwrap_or_default(),
            })
            .collect();
        let snap = snapshot(&self.cfg, now, &queue, &running, gpus, &usage);
        let answer = {
            let mut chain = lock(&self.chain);
            let chain: &mut Chain = &mut chain;
            off_runtime(move || chain.evaluate(&snap))
        };
        let changed: Vec<(i64, String, String, String)> = {
            let mut chain = lock(&self.chain);
            let changed = answer
                .verdicts
                .iter()
                .filter(|(k, v)| chain.stored_verdicts.get(*k) != Some(*v))
                .map(|((t, p), (k, r))| (*t, p.clone(), k.clone(), r.clone()))
                .collect();
            chain.stored_verdicts = answer.verdicts.clone();
            changed
        };
        self.store().record_verdicts(&changed, now)?;
        for (task, reason) in &answer.preempt {
            if !running.iter().any(|r| r.id == *task && r.preemptible) {
                continue;
            }
            // Bound first: the store's lock must be released before signalling.
            let request = self.store().request_preempt(*task, reason, now)?;
            if let Some((run, pid)) = request {
                tracing::info!("task {task}: {reason}");
                self.signal_supervisor(run, pid);
            }
        }
        for (name, msg) in &answer.failures {
            tracing::warn!("{msg}");
            if let Err(e) = self.store().plugin_event("plugin-failed", msg, now) {
                tracing::error!("policy {name}: cannot record its failure: {e}");
            }
        }
        let any_open_deferral = answer
            .judgements
            .values()
            .any(|j| matches!(j, Judgement::Deferred(_)));
        *lock(&self.policy_wake) = match (answer.wake_at, any_open_deferral) {
            (Some(t), _) => Some(t),
            // Deferrals without an `until` are looked at again within a minute.
            (None, true) => Some(now + 60_000),
            (None, false) => None,
        };
        if !answer.closed_gpus.is_empty() {
            // A GPU closed by a policy (a hot one) is looked at again with the next GPU reading.
            let again = now + self.cfg.gpu.sample_period.as_millis() as i64;
            let mut wake = lock(&self.policy_wake);
            *wake = Some(wake.map_or(again, |w| w.min(again)));
        }
        lock(&self.pool).policy_closed = answer.closed_gpus.keys().copied().collect();
        let mut order = Vec::with_capacity(queue.len());
        for c in &queue {
            match answer
                .judgements
                .get(&c.id)
                .cloned()
                .unwrap_or(Judgement::Eligible(0))
            {
                Judgement::Eligible(score) => {
                    if lock(&self.wait_reasons).remove(&c.id).is_some() {
                        self.store().set_wait_reason(c.id, None, now)?;
                    }
                    order.push((score, c));
                }
                Judgement::Deferred(reason) => {
                    let changed = lock(&self.wait_reasons).get(&c.id) != Some(&reason);
                    if changed {
                        self.store().set_wait_reason(c.id, Some(&reason), now)?;
                        lock(&self.wait_reasons).insert(c.id, reason);
                    }
                }
                Judgement::Rejected(reason) => {
                    lock(&self.wait_reasons).remove(&c.id);
                    self.store().reject_task(c.id, &reason, now)?;
                    self.changed();
                }
            }
        }
        if let Some(why) = answer.hold_all {
            tracing::warn!("starting nothing: {why}");
            return Ok(false);
        }
        order.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(a.1.submitted_at.cmp(&b.1.submitted_at))
                .then(a.1.id.cmp(&b.1.id))
        });
        let mut started = false;
        for (score, c) in order {
            if lock(&self.pool).slots == 0 {
                break;
            }
            if self.try_start(c) {
                started = true;
                let parts = answer.parts.get(&c.id).map(Vec::as_slice).unwrap_or(&[]);
                let terms: Vec<String> = parts.iter().map(|(n, s)| format!("{n} {s}")).collect();
                let why = if terms.is_empty() {
                    format!("score {score} (no policy scored it)")
                } else {
                    format!("score {score} = {}", terms.join(" + "))
                };
                self.store().note_event(Some(c.id), "placed", &why, now)?;
            }
        }
        Ok(started)
    }

    /// Reloads the chain's plugin files (SIGHUP, `plugins reload`, a change in
    /// the folder), off the async runtime; returns what changed.
    pub fn reload_plugins(&self) -> Vec<String> {
        let changes = {
            let mut chain = super::core::lock(&self.chain);
            let chain: &mut Chain = &mut chain;
            let cfg = &self.cfg;
            off_runtime(move || chain.reload(cfg))
        };
        for c in &changes {
            tracing::info!("{c}");
        }
        if !changes.is_empty() {
            self.changed();
        }
        changes
    }

    /// Re-scans the plugin folder every two seconds and reloads on a change.
    pub async fn watch_plugin_folder(self: std::sync::Arc<Self>) {
        let mut seen = Chain::fingerprint(&self.cfg);
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(2));
        loop {
            tick.tick().await;
            let now = Chain::fingerprint(&self.cfg);
            if now != seen {
                seen = now;
                self.reload_plugins();
            }
        }
    }

    /// The chain's members, for `nightjar plugins ls`.
    pub fn plugin_views(&self) -> Vec<MemberView> {
        super::core::lock(&self.chain).views()
    }

    /// When the chain asked to be asked again.
    pub fn policy_wakeup(&self) -> Option<i64> {
        *super::core::lock(&self.policy_wake)
    }
}
