//! What a policy sees in one pass, with text as `&str`: the SDK reads the
//! contract's compact snapshot (one string table, columns of numbers that
//! name strings by index) into these records without copying any text.

use crate::Priority;
use crate::abi;

/// Everything a policy sees in one pass. `now` is the only clock: policies
/// never read the wall clock, so the same plugin runs unchanged in a
/// simulator. Every id in `queue` and `running` is distinct.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot<'a> {
    /// Unix time in milliseconds (UTC).
    pub now: i64,
    /// IANA name of the daemon's time zone.
    pub time_zone: &'a str,
    /// Offset of that zone from UTC at `now`, in seconds.
    pub utc_offset: i32,
    /// Waiting tasks, in the host's order (priority, then submit time).
    pub queue: Vec<QueuedTask<'a>>,
    /// Running tasks.
    pub running: Vec<RunningTask<'a>>,
    /// Every GPU placement may use.
    pub gpus: Vec<Gpu<'a>>,
    /// Runs that started in the host's usage window (default 7 days).
    pub usage: Vec<Usage<'a>>,
}

/// A task waiting to start (dependencies met, backoff over).
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedTask<'a> {
    /// The task's id.
    pub id: i64,
    /// Its name.
    pub name: &'a str,
    /// Its project.
    pub project: &'a str,
    /// How urgent it is.
    pub priority: Priority,
    /// GPUs it asks for.
    pub gpus: u32,
    /// GPU memory per GPU in bytes, when the task says.
    pub gpu_mem: Option<u64>,
    /// When it was submitted (Unix ms).
    pub submitted_at: i64,
    /// When it became eligible to start (Unix ms).
    pub eligible_at: i64,
    /// Attempts made so far.
    pub attempts: u32,
    /// Expected run time in ms: its timeout if it has one.
    pub estimated_runtime: Option<u64>,
}

/// A task that is running.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningTask<'a> {
    /// The task's id.
    pub id: i64,
    /// Its name.
    pub name: &'a str,
    /// Its project.
    pub project: &'a str,
    /// How urgent it is.
    pub priority: Priority,
    /// GPU indices it holds.
    pub gpus: Vec<u32>,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// Whether the host honours a preemption request for it.
    pub preemptible: bool,
}

/// A GPU as the host last read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu<'a> {
    /// Its index (as `CUDA_VISIBLE_DEVICES` counts).
    pub index: u32,
    /// Its uuid.
    pub uuid: &'a str,
    /// Its model name.
    pub name: &'a str,
    /// Memory in bytes.
    pub mem_total: u64,
    /// Bytes used by all processes.
    pub mem_used: u64,
    /// Bytes reserved by nightjar's placements.
    pub mem_reserved: u64,
    /// Utilisation, percent.
    pub util: u32,
    /// Degrees Celsius.
    pub temperature: u32,
    /// Milliwatts.
    pub power: u32,
    /// False while the host cannot read it.
    pub healthy: bool,
    /// Policies that closed this GPU in the previous pass.
    pub closed_by: Vec<&'a str>,
}

/// One run's use of the machine, for usage accounting.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage<'a> {
    /// The run's project.
    pub project: &'a str,
    /// GPUs it held (0 for CPU-only runs).
    pub gpus: u32,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// When it ended; None while it runs.
    pub ended_at: Option<i64>,
}

/// The strings of an ABI snapshot.
struct Texts<'a> {
    chars: &'a str,
    ends: &'a [u32],
}

impl<'a> Texts<'a> {
    /// String `i`; "" for an index or range the table does not hold (the
    /// host never sends one).
    fn get(&self, i: u32) -> &'a str {
        let i = i as usize;
        let Some(&end) = self.ends.get(i) else {
            return "";
        };
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).copied().unwrap_or(0),
            None => 0,
        };
        self.chars.get(start as usize..end as usize).unwrap_or("")
    }
}

/// Priority from the queue's `priority` column (the case counted from 0).
fn priority(rank: u8) -> Priority {
    match rank {
        0 => Priority::Low,
        1 => Priority::Normal,
        2 => Priority::High,
        _ => Priority::Urgent,
    }
}

/// A "not said" 0 as `None`.
fn said(n: u64) -> Option<u64> {
    (n != 0).then_some(n)
}

/// The snapshot the host sent, with its strings resolved and its columns
/// read back into records.
pub(crate) fn view(w: &abi::Snapshot) -> Snapshot<'_> {
    let t = Texts {
        chars: &w.strings.chars,
        ends: &w.strings.ends,
    };
    let q = &w.queue;
    let u = &w.usage;
    // Columns cut to one length (the host sends them so), which also lets
    // the compiler drop the bounds checks of the loops below.
    let n = [
        q.id.len(),
        q.name.len(),
        q.project.len(),
        q.priority.len(),
        q.gpus.len(),
        q.gpu_mem.len(),
        q.submitted_at.len(),
        q.eligible_at.len(),
        q.attempts.len(),
        q.estimated_runtime.len(),
    ]
    .into_iter()
    .min()
    .unwrap_or(0);
    let (id, name, project, rank) = (&q.id[..n], &q.name[..n], &q.project[..n], &q.priority[..n]);
    let (gpus, gpu_mem, runtime) = (&q.gpus[..n], &q.gpu_mem[..n], &q.estimated_runtime[..n]);
    let (submitted, eligible, attempts) =
        (&q.submitted_at[..n], &q.eligible_at[..n], &q.attempts[..n]);
    let m = [
        u.project.len(),
        u.gpus.len(),
        u.started_at.len(),
        u.ended_at.len(),
    ]
    .into_iter()
    .min()
    .unwrap_or(0);
    let (u_project, u_gpus, u_start, u_end) = (
        &u.project[..m],
        &u.gpus[..m],
        &u.started_at[..m],
        &u.ended_at[..m],
    );
    Snapshot {
        now: w.now,
        time_zone: t.get(w.time_zone),
        utc_offset: w.utc_offset,
        queue: (0..n)
            .map(|i| QueuedTask {
                id: id[i],
                name: t.get(name[i]),
                project: t.get(project[i]),
                priority: priority(rank[i]),
                gpus: gpus[i],
                gpu_mem: said(gpu_mem[i]),
                submitted_at: submitted[i],
                eligible_at: eligible[i],
                attempts: attempts[i],
                estimated_runtime: said(runtime[i]),
            })
            .collect(),
        running: w
            .running
            .iter()
            .map(|r| RunningTask {
                id: r.id,
                name: t.get(r.name),
                project: t.get(r.project),
                priority: r.priority,
                gpus: r.gpus.clone(),
                started_at: r.started_at,
                preemptible: r.preemptible,
            })
            .collect(),
        gpus: w
            .gpus
            .iter()
            .map(|g| Gpu {
                index: g.index,
                uuid: t.get(g.uuid),
                name: t.get(g.name),
                mem_total: g.mem_total,
                mem_used: g.mem_used,
                mem_reserved: g.mem_reserved,
                util: g.util,
                temperature: g.temperature,
                power: g.power,
                healthy: g.healthy,
                closed_by: g.closed_by.iter().map(|&c| t.get(c)).collect(),
            })
            .collect(),
        usage: (0..m)
            .map(|i| Usage {
                project: t.get(u_project[i]),
                gpus: u_gpus[i],
                started_at: u_start[i],
                ended_at: (u_end[i] != 0).then_some(u_end[i]),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_resolve_by_index_and_bad_indices_read_as_empty() {
        let t = Texts {
            chars: "visionbioé",
            ends: &[6, 9, 11, 10, 99],
        };
        assert_eq!(t.get(0), "vision");
        assert_eq!(t.get(1), "bio");
        assert_eq!(t.get(2), "é");
        assert_eq!(t.get(3), "", "an end before its start");
        assert_eq!(t.get(4), "", "an end past the text");
        assert_eq!(t.get(5), "", "no such index");
        let cut = Texts {
            chars: "é",
            ends: &[1],
        };
        assert_eq!(cut.get(0), "", "not on a character boundary");
    }

    #[test]
    fn columns_read_back_as_records_and_a_short_column_cuts_the_rest() {
        let w = abi::Snapshot {
            now: 50,
            time_zone: 2,
            utc_offset: 3600,
            strings: abi::Strings {
                chars: "t1bioUTC".into(),
                ends: vec![2, 5, 8],
            },
            queue: abi::Queue {
                id: vec![7, 8],
                name: vec![0, 0],
                project: vec![1, 1],
                priority: vec![3, 0],
                gpus: vec![2, 0],
                gpu_mem: vec![0, 1 << 30],
                submitted_at: vec![10, 20],
                eligible_at: vec![11, 21],
                attempts: vec![1, 0],
                estimated_runtime: vec![0, 600],
            },
            running: Vec::new(),
            gpus: Vec::new(),
            usage: abi::Usage {
                project: vec![1],
                gpus: vec![2],
                started_at: vec![5],
                ended_at: vec![0],
            },
        };
        let s = view(&w);
        assert_eq!((s.now, s.time_zone, s.utc_offset), (50, "UTC", 3600));
        let a = &s.queue[0];
        assert_eq!((a.id, a.name, a.project), (7, "t1", "bio"));
        assert_eq!(a.priority, Priority::Urgent);
        assert_eq!((a.gpus, a.gpu_mem, a.estimated_runtime), (2, None, None));
        let b = &s.queue[1];
        assert_eq!(b.priority, Priority::Low);
        assert_eq!((b.gpu_mem, b.estimated_runtime), (Some(1 << 30), Some(600)));
        assert_eq!((b.submitted_at, b.eligible_at, b.attempts), (20, 21, 0));
        let mut short = w.clone();
        short.queue.attempts.pop();
        assert_eq!(view(&short).queue.len(), 1, "past a short column: no tasks");
        assert_eq!(
            s.usage,
            [Usage {
                project: "bio",
                gpus: 2,
                started_at: 5,
                ended_at: None
            }]
        );
    }
}
