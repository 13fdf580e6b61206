//! What the host sends an incremental plugin: the change from the snapshot
//! the plugin holds ([`Held`]) to this pass's, made once per pass for every
//! plugin that holds the same one. The host keeps what it sent, not what the
//! plugin says it has: the plugin's answer only confirms the generation.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::diff::{self, Edit};
use super::parts::{self, Kind, Wire, whole_gpus, whole_running};
use super::types as w;
use crate::plugins::policy as p;
use crate::plugins::v0_2::MAX_TEXT;

/// Generations are numbered for the whole process, so a plugin can never
/// confirm a snapshot another one was sent.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

/// Strings the table may hold past what the snapshot names before the next
/// change starts from nothing.
const SLACK_STRINGS: usize = 4096;

/// What a plugin instance holds once it has applied a change.
#[derive(Debug)]
pub struct Held {
    /// The generation it confirms.
    pub generation: u64,
    /// The form of the changes it was sent.
    pub(super) kind: Kind,
    /// Its queue, as what tells a task's change.
    rows: Arc<Vec<Row>>,
    /// Whether `rows` is in the host's queue order.
    sorted: bool,
    /// Its usage (the pass's own list, shared), and the projects it names.
    usage: Arc<[p::Usage]>,
    projects: Arc<[Arc<str>]>,
    /// Strings in its table.
    strings: usize,
    /// Bytes of text in its table.
    bytes: usize,
    /// Its running tasks and GPUs (a delta policy's only: an incremental
    /// one is sent them whole).
    /// Shared with the changes after this one until a part changes.
    pub(super) running: Arc<[p::RunningTask]>,
    pub(super) gpus: Arc<[p::Gpu]>,
    /// The table's position of every string sent as shared (projects, the
    /// time zone, GPU names and uuids, policy names: a few, that recur),
    /// shared with the changes after this one until one adds to it.
    shared: Arc<HashMap<String, u32>>,
}

impl Held {
    /// The form of the changes it was sent.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// A record of a snapshot no plugin was ever sent (its generation is
    /// new), for tests of a plugin that does not hold what the host thinks.
    #[cfg(test)]
    pub(crate) fn forged(snapshot: &p::Snapshot, kind: Kind) -> Held {
        Held {
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
            kind,
            running: Arc::from([]),
            gpus: Arc::from([]),
            rows: Arc::new(snapshot.queue.iter().map(row).collect()),
            sorted: false,
            usage: snapshot.usage.clone(),
            projects: snapshot.projects.clone(),
            strings: 0,
            bytes: 0,
            shared: Arc::default(),
        }
    }
}

/// One pass's change, and what the plugin holds once it applies it.
pub struct Change {
    /// The change as the plugin's version of the contract writes it.
    pub wire: Wire,
    /// What the plugin holds after it.
    pub held: Arc<Held>,
}

/// The string table's growth in this change.
pub(super) struct Table {
    chars: String,
    ends: Vec<u32>,
    /// Strings the plugin holds before the change.
    first: usize,
    /// Bytes it holds before the change.
    bytes: usize,
    /// The shared strings held before the change.
    shared: Arc<HashMap<String, u32>>,
    /// Shared strings this change adds.
    added: HashMap<String, u32>,
}

impl Table {
    pub(super) fn push(&mut self, s: &str) -> u32 {
        self.chars.push_str(s);
        self.ends
            .push(u32::try_from(self.chars.len()).unwrap_or(u32::MAX));
        u32::try_from(self.first + self.ends.len() - 1).unwrap_or(u32::MAX)
    }

    pub(super) fn shared(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.shared.get(s).or_else(|| self.added.get(s)) {
            return i;
        }
        let i = self.push(s);
        self.added.insert(s.to_string(), i);
        i
    }

    /// The shared strings held after the change: the same map unless this
    /// change added to it.
    fn shared_after(&mut self) -> Arc<HashMap<String, u32>> {
        if self.added.is_empty() {
            return Arc::clone(&self.shared);
        }
        let mut all = (*self.shared).clone();
        all.extend(self.added.drain());
        Arc::new(all)
    }
}

/// A queued task as the change compares it, in a few contiguous bytes:
/// its place in the host's order (priority, submit time, id) and what a
/// plugin is sent of it that can change while it waits. A task's name and
/// project are fixed when it is submitted (nothing in the store updates
/// them), so only their lengths are kept, as a guard: comparing the text of
/// 10,000 tasks, each string a read of its own, was a third of a change's
/// cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    rank: u8,
    submitted_at: i64,
    id: i64,
    eligible_at: i64,
    attempts: u32,
    gpus: u32,
    gpu_mem: u64,
    estimated_runtime: u64,
    name_len: usize,
    project_len: usize,
}

fn row(t: &p::QueuedTask) -> Row {
    Row {
        rank: rank(t.priority),
        submitted_at: t.submitted_at,
        id: t.id,
        eligible_at: t.eligible_at,
        attempts: t.attempts,
        gpus: t.resources.gpus,
        gpu_mem: t.resources.gpu_mem.unwrap_or(0),
        estimated_runtime: t.estimated_runtime.unwrap_or(0),
        name_len: t.name.len(),
        project_len: t.project.len(),
    }
}

/// Whether `queue` is, row for row, what `rows` describes.
fn unchanged(rows: &[Row], queue: &[p::QueuedTask]) -> bool {
    rows.len() == queue.len() && rows.iter().zip(queue).all(|(r, t)| *r == row(t))
}

/// The host's queue order: priority (highest first), submit time, id.
fn queue_key(r: &Row) -> (std::cmp::Reverse<u8>, i64, i64) {
    (std::cmp::Reverse(r.rank), r.submitted_at, r.id)
}

/// The case of `p`, counted from 0, as the queue's `priority` column says it.
pub(super) fn rank(p: p::Priority) -> u8 {
    match p {
        p::Priority::Low => 0,
        p::Priority::Normal => 1,
        p::Priority::High => 2,
        p::Priority::Urgent => 3,
    }
}

pub(super) fn priority(p: p::Priority) -> super::super::v0_2::nightjar::plugin::types::Priority {
    use super::super::v0_2::nightjar::plugin::types::Priority as W;
    match p {
        p::Priority::Low => W::Low,
        p::Priority::Normal => W::Normal,
        p::Priority::High => W::High,
        p::Priority::Urgent => W::Urgent,
    }
}

fn edit(e: &Edit) -> w::Edit {
    w::Edit {
        removed: e.removed.clone(),
        added_at: e.added_at.clone(),
    }
}

/// The edit from the usage a plugin holds (`old`, naming `old_projects`) to
/// `s`'s: rows are the same when their times, GPUs and project names are.
/// Two lists naming one table (the simulator's every pass) compare
/// positions, not names; the very list held is unchanged.
fn usage_edit(old: &[p::Usage], old_projects: &[Arc<str>], s: &p::Snapshot) -> Edit {
    let same_table = std::ptr::eq(old_projects, &s.projects[..]);
    // The list the plugin holds, handed on (no run started or ended).
    if same_table && std::ptr::eq(old, &s.usage[..]) {
        return Edit::default();
    }
    if same_table {
        return diff::aligned(old, &s.usage);
    }
    fn name<'t>(table: &'t [Arc<str>], u: &p::Usage) -> Option<&'t str> {
        table.get(u.project as usize).map(|n| &**n)
    }
    diff::aligned_by(old, &s.usage, |a, b| {
        (a.gpus, a.started_at, a.ended_at) == (b.gpus, b.started_at, b.ended_at)
            && name(old_projects, a) == name(&s.projects, b)
    })
}

/// Whether a plugin holding `held` should start again from nothing for `s`:
/// when its table holds far more strings than `s` names (every queued
/// task's name stays in the table after the task leaves).
fn worn(held: &Held, s: &p::Snapshot) -> bool {
    let live = s.queue.len() + held.shared.len();
    held.strings > 2 * live + SLACK_STRINGS
}

/// A part as the plugin holds it after a change: the base's, shared, when
/// the change left it out; else the snapshot's, copied.
fn kept<T: Clone>(sent: bool, base: Option<&Arc<[T]>>, now: &[T]) -> Arc<[T]> {
    match base {
        Some(b) if !sent => Arc::clone(b),
        _ => Arc::from(now),
    }
}

/// The change from `base` (what the plugin holds; none: from nothing) to
/// `s`, in the form of `kind`. A base of the other form counts as none.
pub fn change(base: Option<&Held>, s: &Arc<p::Snapshot>, kind: Kind) -> Result<Change, String> {
    let base = base.filter(|h| h.kind == kind && !worn(h, s));
    let (old_rows, old_sorted, old_usage, old_projects) = match base {
        Some(h) => (&h.rows[..], h.sorted, &h.usage[..], &h.projects[..]),
        None => (&[][..], true, &[][..], &[][..]),
    };
    // A queue as the plugin holds it (most passes: only the clock moved)
    // is compared in place and its rows shared, not built again.
    let (queue_edit, sorted, rows) = match base {
        Some(h) if unchanged(&h.rows, &s.queue) => (Edit::default(), h.sorted, Arc::clone(&h.rows)),
        _ => {
            let rows: Vec<Row> = s.queue.iter().map(row).collect();
            let (edit, sorted) = diff::by_key(old_rows, old_sorted, &rows, queue_key);
            (edit, sorted, Arc::new(rows))
        }
    };
    let usage_edit = usage_edit(old_usage, old_projects, s);
    let mut t = Table {
        chars: String::new(),
        ends: Vec::new(),
        first: base.map_or(0, |h| h.strings),
        bytes: base.map_or(0, |h| h.bytes),
        shared: base.map(|h| Arc::clone(&h.shared)).unwrap_or_default(),
        added: HashMap::new(),
    };
    let time_zone = t.shared(&s.time_zone);
    let n = queue_edit.added_at.len();
    let mut queue = w::Queue {
        id: Vec::with_capacity(n),
        name: Vec::with_capacity(n),
        project: Vec::with_capacity(n),
        priority: Vec::with_capacity(n),
        gpus: Vec::with_capacity(n),
        gpu_mem: Vec::with_capacity(n),
        submitted_at: Vec::with_capacity(n),
        eligible_at: Vec::with_capacity(n),
        attempts: Vec::with_capacity(n),
        estimated_runtime: Vec::with_capacity(n),
    };
    for &at in &queue_edit.added_at {
        let q = &s.queue[at as usize];
        queue.id.push(q.id);
        queue.name.push(t.push(&q.name));
        queue.project.push(t.shared(&q.project));
        queue.priority.push(rank(q.priority));
        queue.gpus.push(q.resources.gpus);
        queue.gpu_mem.push(q.resources.gpu_mem.unwrap_or(0));
        queue.submitted_at.push(q.submitted_at);
        queue.eligible_at.push(q.eligible_at);
        queue.attempts.push(q.attempts);
        queue
            .estimated_runtime
            .push(q.estimated_runtime.unwrap_or(0));
    }
    let (running, gpus, delta) = match kind {
        Kind::Incremental => (whole_running(s, &mut t), whole_gpus(s, &mut t), None),
        Kind::Delta => {
            let (old_running, old_gpus) =
                base.map_or((&[][..], &[][..]), |h| (&h.running[..], &h.gpus[..]));
            let parts = parts::Parts {
                running: parts::running(old_running, &s.running, &mut t),
                gpus: parts::gpus(old_gpus, &s.gpus, &mut t),
            };
            (Vec::new(), Vec::new(), Some(parts))
        }
    };
    let m = usage_edit.added_at.len();
    let mut usage = w::Usage {
        project: Vec::with_capacity(m),
        gpus: Vec::with_capacity(m),
        started_at: Vec::with_capacity(m),
        ended_at: Vec::with_capacity(m),
    };
    for &at in &usage_edit.added_at {
        let u = &s.usage[at as usize];
        usage.project.push(t.shared(s.project(u)));
        usage.gpus.push(u.gpus);
        usage.started_at.push(u.started_at);
        usage.ended_at.push(u.ended_at.unwrap_or(0));
    }
    let bytes = t.bytes.saturating_add(t.chars.len());
    if bytes > MAX_TEXT {
        if base.is_some() {
            // The table is full of what earlier passes named: start again.
            return change(None, s, kind);
        }
        return Err(format!(
            "the snapshot's text is {bytes} bytes, over the {MAX_TEXT} a string table can index"
        ));
    }
    let generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
    let (held_running, held_gpus) = match kind {
        Kind::Incremental => (Arc::from([]), Arc::from([])),
        Kind::Delta => {
            let sent = delta
                .as_ref()
                .map_or((true, true), |p| (p.running.is_some(), p.gpus.is_some()));
            (
                kept(sent.0, base.map(|h| &h.running), &s.running),
                kept(sent.1, base.map(|h| &h.gpus), &s.gpus),
            )
        }
    };
    let held = Arc::new(Held {
        generation,
        kind,
        running: held_running,
        gpus: held_gpus,
        rows,
        sorted,
        usage: s.usage.clone(),
        projects: s.projects.clone(),
        strings: t.first + t.ends.len(),
        bytes,
        shared: t.shared_after(),
    });
    let whole = w::Snapshot {
        generation,
        base: base.map_or(0, |h| h.generation),
        now: s.now,
        time_zone,
        utc_offset: s.utc_offset,
        strings: w::Strings {
            chars: t.chars,
            ends: t.ends,
        },
        queue: w::QueueChange {
            edit: edit(&queue_edit),
            added: queue,
        },
        running,
        gpus,
        usage: w::UsageChange {
            edit: edit(&usage_edit),
            added: usage,
        },
    };
    let wire = match delta {
        None => Wire::Incremental(whole),
        Some(parts) => Wire::Delta(parts::delta(whole, parts)),
    };
    Ok(Change { wire, held })
}

impl Change {
    /// The generation the change is from (0: from nothing).
    pub fn base(&self) -> u64 {
        match &self.wire {
            Wire::Incremental(w) => w.base,
            Wire::Delta(d) => d.base,
        }
    }
}

#[cfg(test)]
#[path = "feed_tests.rs"]
mod tests;
