//! A policy's answer: one call per verdict, closed GPU or preemption
//! request, naming tasks by id. The SDK writes it in the contract's compact
//! form (tasks by position, each reason once).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::Reason;
use crate::abi;
use crate::snapshot::{QueuedTask, Snapshot};

/// A policy's answer for one pass. Tasks without a verdict are allowed with
/// score 0.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evaluation {
    /// Verdicts, at most one per queued task.
    pub verdicts: Vec<TaskVerdict>,
    /// GPUs closed to new work.
    pub closed_gpus: Vec<ClosedGpu>,
    /// Running tasks to stop and requeue.
    pub preempt: Vec<Preemption>,
}

/// A verdict for one waiting task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskVerdict {
    /// The task's id.
    pub task: i64,
    /// The judgement.
    pub verdict: Verdict,
}

/// A policy's judgement of one waiting task.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// May start; higher summed scores start first.
    Allow(i32),
    /// Not now: why, and (optionally) when to ask again.
    Defer(Deferral),
    /// Never under this policy: the task fails with this reason.
    Reject(Reason),
}

/// Why and how long a task waits.
#[derive(Debug, Clone, PartialEq)]
pub struct Deferral {
    /// Why, for people.
    pub reason: Reason,
    /// When to ask again (Unix ms), if the policy knows.
    pub until: Option<i64>,
}

/// A GPU closed to new work (running tasks stay).
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedGpu {
    /// The GPU's index.
    pub index: u32,
    /// Why, for people.
    pub reason: Reason,
}

/// A request to stop a running task and requeue it.
#[derive(Debug, Clone, PartialEq)]
pub struct Preemption {
    /// The running task's id.
    pub task: i64,
    /// Why, for people.
    pub reason: Reason,
}

impl Evaluation {
    /// An empty answer with room for `verdicts` verdicts (a policy that
    /// judges every queued task: `Evaluation::with_capacity(s.queue.len())`).
    pub fn with_capacity(verdicts: usize) -> Evaluation {
        Evaluation {
            verdicts: Vec::with_capacity(verdicts),
            ..Evaluation::default()
        }
    }

    /// Allows a task with a score (higher starts first).
    pub fn allow(&mut self, task: i64, score: i32) {
        self.verdicts.push(TaskVerdict {
            task,
            verdict: Verdict::Allow(score),
        });
    }

    /// Defers a task with a reason, optionally until a time (Unix ms).
    pub fn defer(&mut self, task: i64, reason: impl Into<Reason>, until: Option<i64>) {
        self.verdicts.push(TaskVerdict {
            task,
            verdict: Verdict::Defer(Deferral {
                reason: reason.into(),
                until,
            }),
        });
    }

    /// Rejects a task for good under this policy.
    pub fn reject(&mut self, task: i64, reason: impl Into<Reason>) {
        self.verdicts.push(TaskVerdict {
            task,
            verdict: Verdict::Reject(reason.into()),
        });
    }

    /// Closes a GPU to new work.
    pub fn close_gpu(&mut self, index: u32, reason: impl Into<Reason>) {
        self.closed_gpus.push(ClosedGpu {
            index,
            reason: reason.into(),
        });
    }

    /// Asks the host to stop a running task and requeue it.
    pub fn preempt(&mut self, task: i64, reason: impl Into<Reason>) {
        self.preempt.push(Preemption {
            task,
            reason: reason.into(),
        });
    }
}

/// The position the host is told for an id that is not in the snapshot:
/// past every list, so the host refuses the answer as naming a task that is
/// not there.
const NOT_THERE: u32 = u32::MAX;

/// Finds queued tasks' positions by id. Policies answer in queue order,
/// skipping the tasks they leave alone: each id is looked for ahead of the
/// last one found. The first that is not there (an answer out of order, or
/// an id not queued) builds the index of every id, used from then on, so
/// no answer scans the queue more than twice.
struct Positions<'s, 'a> {
    queue: &'s [QueuedTask<'a>],
    next: usize,
    all: Option<HashMap<i64, u32, BuildHasherDefault<AddressHash>>>,
}

impl Positions<'_, '_> {
    fn of(&mut self, id: i64) -> Option<u32> {
        if self.all.is_none() {
            let ahead = self.queue.get(self.next..).unwrap_or(&[]);
            if let Some(k) = ahead.iter().position(|t| t.id == id) {
                self.next += k + 1;
                return u32::try_from(self.next - 1).ok();
            }
        }
        let queue = self.queue;
        let all = self
            .all
            .get_or_insert_with(|| (0u32..).zip(queue).map(|(i, t)| (t.id, i)).collect());
        all.get(&id).copied()
    }
}

/// The reason table of an answer: each reason is written once, however
/// many verdicts give it. A clone of one already written is found by its
/// address (a policy that words a reason per case and hands its cases out
/// of order, as offpeak-tariff's overruns, wrote the text again for every
/// verdict, and the host read it again each time); the same text as the
/// reason given just before it, made apart from it, by comparing the two.
#[derive(Default)]
struct Reasons {
    /// The reasons written, each kept (so no address is reused while the
    /// table is made) and given up as text at the end ([`Reasons::table`]).
    table: Vec<Reason>,
    /// The reason given last, and its index.
    last: Option<(Reason, u32)>,
    /// Index of each reason written, by the address of its text.
    seen: HashMap<usize, u32, BuildHasherDefault<AddressHash>>,
}

/// A hash of an address for [`Reasons`] (and of a task id for
/// [`Positions`]): one multiply and a fold (the standard SipHash was a
/// sixth of a deferring policy's answer). Addresses are the SDK's own
/// allocations and ids the host's, not chosen by anyone who could aim at
/// collisions.
#[derive(Default)]
struct AddressHash(u64);

impl Hasher for AddressHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b) ^ self.0.rotate_left(8));
        }
    }

    fn write_u64(&mut self, n: u64) {
        let h = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

impl Reasons {
    fn add(&mut self, reason: Reason) -> u32 {
        // A clone of one written: found by its text's address (each written
        // reason is kept alive in `table`, so its address names it alone).
        let at = reason.as_str().as_ptr() as usize;
        let i = match self.seen.get(&at) {
            Some(&i) => i,
            // The same text as the one before it, made apart from it.
            None => match &self.last {
                Some((l, i)) if Reason::same(l, &reason) => *i,
                _ => {
                    let i = u32::try_from(self.table.len()).unwrap_or(NOT_THERE);
                    if self.seen.is_empty() {
                        // Sized once for a deferring policy's few dozen reasons.
                        self.seen.reserve(32);
                    }
                    self.table.push(reason.clone());
                    self.seen.insert(at, i);
                    i
                }
            },
        };
        self.last = Some((reason, i));
        i
    }

    /// The texts, in table order: each taken without a copy where no clone
    /// of its reason is left (the verdicts that gave it are gone by now).
    fn table(self) -> Vec<String> {
        let Reasons { table, last, seen } = self;
        drop((last, seen));
        table.into_iter().map(Reason::into_string).collect()
    }
}

/// Writes `e` for the host as the answer for `generation`: scores as one
/// column by position in `s` (none when every score is 0), deferrals and
/// rejections as columns, reasons in one table. A verdict that cannot be
/// written (its id is not in `s`, or a second verdict for one task) is sent
/// as a deferral of a position that is not there, so the host refuses the
/// answer, and is logged.
pub(crate) fn to_abi(s: &Snapshot<'_>, e: Evaluation, generation: u64) -> abi::Evaluation {
    let n = s.queue.len();
    let mut positions = Positions {
        queue: &s.queue,
        next: 0,
        all: None,
    };
    let mut reasons = Reasons::default();
    let mut unknown = None;
    let mut twice = None;
    let mut scores: Vec<i32> = Vec::new();
    let mut deferred = abi::Deferrals {
        task: Vec::new(),
        reason: Vec::new(),
        until: Vec::new(),
    };
    let mut rejected = abi::Rejections {
        task: Vec::new(),
        reason: Vec::new(),
    };
    let mut verdicts = e.verdicts.into_iter().peekable();
    // The usual answer first: allows in queue order, one per task, written
    // straight into the score column.
    let mut k = 0usize;
    while let Some(v) = verdicts.next_if(|v| {
        matches!(v.verdict, Verdict::Allow(_)) && s.queue.get(k).is_some_and(|t| t.id == v.task)
    }) {
        if let Verdict::Allow(score) = v.verdict
            && score != 0
        {
            if scores.is_empty() {
                scores = vec![0; n];
            }
            if let Some(slot) = scores.get_mut(k) {
                *slot = score;
            }
        }
        k += 1;
    }
    positions.next = k;
    // Then any other verdict, by id.
    let mut judged: Vec<bool> = Vec::new();
    let rest = verdicts.len();
    for v in verdicts {
        if judged.is_empty() {
            judged = vec![false; n];
            judged[..k].fill(true);
            // Mostly deferrals, when not scores: their columns sized once.
            deferred.task.reserve(rest);
            deferred.reason.reserve(rest);
            deferred.until.reserve(rest);
        }
        let Some(at) = positions.of(v.task) else {
            unknown.get_or_insert(v.task);
            deferred.task.push(NOT_THERE);
            deferred.reason.push(0);
            deferred.until.push(0);
            continue;
        };
        if let Some(seen) = judged.get_mut(at as usize)
            && std::mem::replace(seen, true)
        {
            twice.get_or_insert(v.task);
            deferred.task.push(NOT_THERE);
            deferred.reason.push(0);
            deferred.until.push(0);
            continue;
        }
        match v.verdict {
            Verdict::Allow(0) => {}
            Verdict::Allow(score) => {
                if scores.is_empty() {
                    scores = vec![0; n];
                }
                if let Some(slot) = scores.get_mut(at as usize) {
                    *slot = score;
                }
            }
            Verdict::Defer(d) => {
                deferred.task.push(at);
                deferred.reason.push(reasons.add(d.reason));
                // 0 is "not said" on the wire; no one defers to 1970.
                deferred.until.push(d.until.unwrap_or(0));
            }
            Verdict::Reject(r) => {
                rejected.task.push(at);
                rejected.reason.push(reasons.add(r));
            }
        }
    }
    let closed_gpus = e
        .closed_gpus
        .into_iter()
        .map(|c| abi::ClosedGpu {
            index: c.index,
            reason: reasons.add(c.reason),
        })
        .collect();
    let preempt = e
        .preempt
        .into_iter()
        .map(|p| {
            let task = s
                .running
                .iter()
                .position(|r| r.id == p.task)
                .and_then(|i| u32::try_from(i).ok())
                .unwrap_or_else(|| {
                    unknown.get_or_insert(p.task);
                    NOT_THERE
                });
            abi::Preemption {
                task,
                reason: reasons.add(p.reason),
            }
        })
        .collect();
    if let Some(id) = unknown {
        crate::log(
            crate::Level::Error,
            &format!("the answer names task {id}, which is not in the snapshot"),
        );
    }
    if let Some(id) = twice {
        crate::log(
            crate::Level::Error,
            &format!("the answer gives task {id} two verdicts"),
        );
    }
    abi::Evaluation {
        generation,
        reasons: reasons.table(),
        scores,
        deferred,
        rejected,
        closed_gpus,
        preempt,
    }
}

#[cfg(test)]
#[path = "evaluation_tests.rs"]
mod tests;
