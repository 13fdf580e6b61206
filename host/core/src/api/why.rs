//! The reply to `why`: a typed account of why a task waits, or where and why
//! it started (`--json why` prints it as is), and the lines a person reads.

use serde::{Deserialize, Serialize};

use crate::time::{fmt_local, fmt_span};

/// Why a GPU cannot take a task now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Unusable {
    /// Closed to new work by a policy this pass (e.g. thermal).
    ClosedByPolicy {
        /// The policy's words.
        reason: String,
    },
    /// Closed by monitoring: unhealthy, or busy with work nightjar did not start.
    Closed,
    /// Held whole by a run.
    Exclusive,
    /// The task wants the GPU whole, and others use it.
    InUse {
        /// Runs on it.
        runs: u32,
        /// Memory held by processes nightjar did not start, bytes.
        foreign: u64,
    },
    /// Not enough memory left for the task's `gpu_mem`.
    Memory {
        /// Free after reservations and foreign use, bytes.
        free: u64,
        /// What the task asks for, bytes.
        want: u64,
    },
    /// A run started on it less than `[gpu] stagger` ago.
    Staggered {
        /// The task whose run started there.
        task: i64,
        /// How long ago, ms.
        ago_ms: i64,
    },
    /// Its last run ran out of GPU memory: the retry waits for a GPU with
    /// more free memory than that run's peak.
    BelowPeak {
        /// Free on this GPU, bytes.
        free: u64,
        /// The last run's peak, bytes.
        peak: u64,
    },
}

/// One GPU as a task sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuFit {
    /// Index.
    pub index: u32,
    /// Why it cannot take the task now (`None`: it can).
    pub unusable: Option<Unusable>,
}

/// Whether a task fits what is free now, and what stands in the way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Fit {
    /// Free slots.
    pub slots_free: u32,
    /// GPUs the task asks for.
    pub gpus_wanted: u32,
    /// Every GPU with whether it could take the task.
    pub gpus: Vec<GpuFit>,
    /// Cores the task asks to be pinned to.
    pub cpus_wanted: u32,
    /// Cores free to pin.
    pub cpus_free: u32,
}

impl Fit {
    /// GPUs that could take the task now.
    pub fn usable_gpus(&self) -> usize {
        self.gpus.iter().filter(|g| g.unusable.is_none()).count()
    }

    /// Whether the task would be placed now.
    pub fn fits(&self) -> bool {
        self.slots_free > 0
            && self.cpus_free >= self.cpus_wanted
            && self.usable_gpus() >= self.gpus_wanted as usize
    }
}

/// A dependency the task still waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WaitingDep {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: String,
}

/// One policy's current verdict on the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PolicyVerdict {
    /// The policy, in chain order.
    pub plugin: String,
    /// `allow`, `defer` or `reject`.
    pub verdict: String,
    /// Its reason (or score).
    pub reason: String,
    /// Since when (Unix ms).
    pub since: i64,
}

/// The task's latest run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunWhy {
    /// Run id.
    pub id: i64,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// GPUs it was given.
    pub gpus: Option<String>,
    /// Why it started then: its score by policy, or the built-in order.
    pub because: String,
    /// How long it waited after becoming eligible, ms.
    pub waited_ms: i64,
    /// How it ended, once it has.
    pub class: Option<String>,
    /// The hint that goes with its class (what was seen, what to do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What its executor says of it while it is in progress: a SLURM
    /// job's state and SLURM's reason (`SLURM job 12: PENDING (Resources)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<String>,
}

/// Why a task is where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WhyReport {
    /// Task id.
    pub id: i64,
    /// Task name.
    pub name: String,
    /// Its state.
    pub state: String,
    /// When it was submitted (Unix ms).
    pub submitted_at: i64,
    /// What keeps it (a policy's deferral, a block, a hold, a failure).
    pub reason: Option<String>,
    /// Dependencies it still waits for.
    pub waiting_for: Vec<WaitingDep>,
    /// For a queued task nothing else holds: what placing it now would meet,
    /// from the same code that places tasks.
    pub fit: Option<Fit>,
    /// Slots in all.
    pub slots: u32,
    /// A recurring template's next firing (Unix ms).
    pub next_firing: Option<i64>,
    /// Its latest run.
    pub run: Option<RunWhy>,
    /// Each policy's current verdict, in chain order.
    pub verdicts: Vec<PolicyVerdict>,
    /// A preemption a policy asked for and the host refused: (why, when).
    pub refused_preemption: Option<(String, i64)>,
    /// A sweep's members: how many, and their states in one line.
    pub members: Option<(u32, String)>,
}

/// A GPU's obstacle in words (`index` is the GPU's).
pub fn unusable_text(index: u32, u: &Unusable) -> String {
    match u {
        Unusable::Staggered { task, ago_ms } => {
            format!(
                "staggered: GPU {index} started task {task} {} ago",
                fmt_span(*ago_ms)
            )
        }
        other => unusable(other),
    }
}

/// A GPU's obstacle in words.
fn unusable(u: &Unusable) -> String {
    let size = |b: u64| bytesize::ByteSize::b(b).display().iec_short().to_string();
    match u {
        Unusable::ClosedByPolicy { reason } => reason.clone(),
        Unusable::Closed => "closed (unhealthy, or busy with work nightjar did not start: `nightjar gpus` says which)".into(),
        Unusable::Exclusive => "held whole by a run".into(),
        Unusable::Staggered { task, ago_ms } => {
            format!("staggered: task {task} started on it {} ago", fmt_span(*ago_ms))
        }
        Unusable::InUse { runs, foreign } => {
            format!("the task wants it whole; in use by {runs} run(s) and {} of foreign memory", size(*foreign))
        }
        Unusable::Memory { free, want } => {
            format!("{} free, the task asks for gpu_mem {}", size(*free), size(*want))
        }
        Unusable::BelowPeak { free, peak } => format!(
            "{} free; its last run ran out of GPU memory at a peak of {}, so the retry waits for a GPU with more free",
            size(*free),
            size(*peak)
        ),
    }
}

impl WhyReport {
    /// The report as lines for a person, times relative to `now` (Unix ms).
    pub fn lines(&self, now: i64) -> Vec<String> {
        let mut out = vec![format!(
            "task {} ({}) is {}",
            self.id, self.name, self.state
        )];
        if !self.waiting_for.is_empty() {
            let deps: Vec<String> = self
                .waiting_for
                .iter()
                .map(|d| format!("{} ({}, {})", d.id, d.name, d.state))
                .collect();
            out.push(format!("waiting for dependencies: {}", deps.join(", ")));
        } else if self.state == "queued" {
            if let Some(r) = &self.reason {
                out.push(format!("waiting: {r}"));
            }
        } else if self.state == "held" {
            // A hold after a disk-full run carries its reason; a user's has none.
            out.push(match &self.reason {
                Some(r) => r.clone(),
                None => "held by a user: `nightjar release` lets it start".into(),
            });
        } else if matches!(self.state.as_str(), "blocked" | "failed" | "cancelled")
            && let Some(r) = &self.reason
        {
            out.push(r.clone());
        }
        if let Some(fit) = &self.fit {
            let usable = fit.usable_gpus();
            if fit.slots_free == 0 {
                out.push(format!(
                    "waiting for a free slot: all {} are in use",
                    self.slots
                ));
            } else if fit.gpus_wanted as usize > usable {
                out.push(format!(
                    "waiting for GPUs: needs {}, {usable} open and free now",
                    fit.gpus_wanted
                ));
                for g in &fit.gpus {
                    if let Some(u) = &g.unusable {
                        out.push(format!("  GPU {}: {}", g.index, unusable_text(g.index, u)));
                    }
                }
            } else if fit.cpus_free < fit.cpus_wanted {
                out.push(format!(
                    "waiting for cores: needs {} pinned, {} free now",
                    fit.cpus_wanted, fit.cpus_free
                ));
            } else {
                out.push("eligible: it starts at the next scheduling pass".into());
            }
        }
        if self.state == "queued" {
            out.push(format!(
                "submitted {} ({} ago)",
                fmt_local(self.submitted_at),
                fmt_span(now - self.submitted_at)
            ));
        }
        if let Some(at) = self.next_firing {
            out.push(format!(
                "recurring: next firing {} (in {})",
                fmt_local(at),
                fmt_span(at - now)
            ));
        }
        if let Some(run) = &self.run {
            let gpus = run
                .gpus
                .as_deref()
                .map(|g| format!(" on GPU {g}"))
                .unwrap_or_default();
            out.push(format!(
                "run {} started {}{gpus}: {}",
                run.id,
                fmt_local(run.started_at),
                run.because
            ));
            out.push(format!(
                "  waited {} after becoming eligible",
                fmt_span(run.waited_ms)
            ));
            if let Some(e) = run.executor.as_ref().filter(|_| run.class.is_none()) {
                out.push(format!("  {e}"));
            }
            if let Some(c) = &run.class {
                match &run.message {
                    Some(m) => out.push(format!("  ended {c}: {m}")),
                    None => out.push(format!("  ended {c}")),
                }
            }
        }
        for v in &self.verdicts {
            out.push(format!(
                "  {}: {} ({}) since {}",
                v.plugin,
                v.verdict,
                v.reason,
                fmt_local(v.since)
            ));
        }
        if let Some((reason, at)) = &self.refused_preemption {
            out.push(format!("  {reason} ({})", fmt_local(*at)));
        }
        if let Some((n, counts)) = &self.members {
            out.push(format!("members: {n} ({counts})"));
        }
        out
    }
}

#[cfg(test)]
#[path = "why_tests.rs"]
mod tests;
