//! The host's snapshot in 0.2's compact form, built once per pass and lowered
//! into every 0.2 plugin: all text in one string table (each project, GPU
//! name and uuid, policy name and the time zone once; task names as they
//! come), the queue and the usage as columns of numbers (each lowered as one
//! copy), strings named by index.

use std::collections::HashMap;

use super::types as w;
use crate::plugins::policy as p;

/// Most bytes of text a 0.2 snapshot can hold: its string table is indexed
/// by `u32` offsets (and a plugin's memory is 32-bit).
pub const MAX_TEXT: usize = u32::MAX as usize;

/// How many strings [`Table::shared`] tries before hashing.
const RECENT: usize = 8;

/// The string table being written.
struct Table<'a> {
    chars: String,
    ends: Vec<u32>,
    /// Randomly keyed: projects are named by whoever submits, and must not
    /// be able to make the table slow.
    index: HashMap<&'a str, u32>,
    /// The strings last looked up, tried before `index`: a lab has a few
    /// projects, and hashing each task's costs more than comparing.
    recent: [Option<(&'a str, u32)>; RECENT],
    next: usize,
    limit: usize,
}

impl<'a> Table<'a> {
    /// `s` as a new string of the table.
    fn push(&mut self, s: &str) -> u32 {
        self.chars.push_str(s);
        let end = u32::try_from(self.chars.len()).unwrap_or(u32::MAX);
        self.ends.push(end);
        u32::try_from(self.ends.len() - 1).unwrap_or(u32::MAX)
    }

    /// `s`, written once however often it is asked for.
    fn shared(&mut self, s: &'a str) -> u32 {
        if let Some((_, i)) = self.recent.iter().flatten().find(|(r, _)| *r == s) {
            return *i;
        }
        let i = match self.index.get(s) {
            Some(&i) => i,
            None => {
                let i = self.push(s);
                self.index.insert(s, i);
                i
            }
        };
        self.recent[self.next] = Some((s, i));
        self.next = (self.next + 1) % RECENT;
        i
    }

    fn finish(self) -> Result<w::Strings, String> {
        if self.chars.len() > self.limit {
            return Err(format!(
                "the snapshot's text is {} bytes, over the {} a 0.2 string table can index",
                self.chars.len(),
                self.limit
            ));
        }
        Ok(w::Strings {
            chars: self.chars,
            ends: self.ends,
        })
    }
}

/// The case of `p`, counted from 0, as the queue's `priority` column says it.
fn rank(p: p::Priority) -> u8 {
    match p {
        p::Priority::Low => 0,
        p::Priority::Normal => 1,
        p::Priority::High => 2,
        p::Priority::Urgent => 3,
    }
}

fn priority(p: p::Priority) -> w::Priority {
    match p {
        p::Priority::Low => w::Priority::Low,
        p::Priority::Normal => w::Priority::Normal,
        p::Priority::High => w::Priority::High,
        p::Priority::Urgent => w::Priority::Urgent,
    }
}

/// `s` in 0.2's form.
pub fn wire(s: &p::Snapshot) -> Result<w::Snapshot, String> {
    wire_within(s, MAX_TEXT)
}

/// `s` in 0.2's form, refused when its text passes `limit` bytes.
fn wire_within(s: &p::Snapshot, limit: usize) -> Result<w::Snapshot, String> {
    // Room for every string, so the table never grows while it is written.
    let bytes: usize = s
        .queue
        .iter()
        .map(|t| t.name.len() + t.project.len())
        .chain(s.usage.iter().map(|u| s.project(u).len()))
        .sum();
    let strings = s.queue.len() + 2 * (s.running.len() + s.gpus.len()) + 1;
    let mut t = Table {
        chars: String::with_capacity(bytes.saturating_add(4096).min(limit)),
        ends: Vec::with_capacity(strings + 64),
        index: HashMap::default(),
        recent: [None; RECENT],
        next: 0,
        limit,
    };
    let time_zone = t.shared(&s.time_zone);
    let n = s.queue.len();
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
    for q in &s.queue {
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
    let running = s
        .running
        .iter()
        .map(|r| w::RunningTask {
            id: r.id,
            name: t.push(&r.name),
            project: t.shared(&r.project),
            priority: priority(r.priority),
            gpus: r.gpus.clone(),
            started_at: r.started_at,
            preemptible: r.preemptible,
        })
        .collect();
    let gpus = s
        .gpus
        .iter()
        .map(|g| w::Gpu {
            index: g.index,
            uuid: t.shared(&g.uuid),
            name: t.shared(&g.name),
            mem_total: g.mem_total,
            mem_used: g.mem_used,
            mem_reserved: g.mem_reserved,
            util: g.util,
            temperature: g.temperature,
            power: g.power,
            healthy: g.healthy,
            closed_by: g.closed_by.iter().map(|c| t.shared(c)).collect(),
        })
        .collect();
    let mut usage = w::Usage {
        project: Vec::with_capacity(s.usage.len()),
        gpus: Vec::with_capacity(s.usage.len()),
        started_at: Vec::with_capacity(s.usage.len()),
        ended_at: Vec::with_capacity(s.usage.len()),
    };
    for u in s.usage.iter() {
        usage.project.push(t.shared(s.project(u)));
        usage.gpus.push(u.gpus);
        usage.started_at.push(u.started_at);
        usage.ended_at.push(u.ended_at.unwrap_or(0));
    }
    Ok(w::Snapshot {
        now: s.now,
        time_zone,
        utc_offset: s.utc_offset,
        strings: t.finish()?,
        queue,
        running,
        gpus,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::tests::{snapshot, task};

    fn text(s: &w::Snapshot, i: u32) -> &str {
        let i = i as usize;
        let start = if i == 0 {
            0
        } else {
            s.strings.ends[i - 1] as usize
        };
        &s.strings.chars[start..s.strings.ends[i] as usize]
    }

    #[test]
    fn every_index_resolves_and_each_project_is_one_string() {
        let mut host = snapshot(vec![
            task(1, "vision", p::Priority::Low, 0),
            task(2, "bio", p::Priority::Urgent, 5),
            task(3, "vision", p::Priority::Normal, 9),
            task(4, "vision", p::Priority::Normal, 9),
        ]);
        host.queue[2].resources.gpu_mem = Some(1 << 30);
        host.queue[2].estimated_runtime = Some(60_000);
        host.gpus[0].closed_by = vec!["thermal".into(), "vision".into()];
        let rows = vec![
            crate::plugins::tests::used(&mut host, "bio", 2, 1, Some(4)),
            crate::plugins::tests::used(&mut host, "new", 1, 3, None),
        ];
        host.usage = rows.into();
        let s = wire(&host).unwrap();
        let q = &s.queue;
        assert_eq!(q.id, [1, 2, 3, 4]);
        assert_eq!(q.project[0], q.project[2], "one project, one index");
        assert_eq!(q.project[2], q.project[3]);
        assert_ne!(q.project[0], q.project[1]);
        let projects: Vec<&str> = q.project.iter().map(|&i| text(&s, i)).collect();
        assert_eq!(projects, ["vision", "bio", "vision", "vision"]);
        assert_eq!(text(&s, q.name[2]), "t3");
        assert_eq!(q.priority, [0, 3, 1, 1]);
        assert_eq!(q.submitted_at, [0, 5, 9, 9]);
        assert_eq!(q.gpu_mem, [0, 0, 1 << 30, 0], "0: not said");
        assert_eq!(q.estimated_runtime, [0, 0, 60_000, 0]);
        assert_eq!(text(&s, s.time_zone), "UTC");
        assert_eq!(text(&s, s.gpus[0].name), "A100");
        let closed: Vec<&str> = s.gpus[0].closed_by.iter().map(|&c| text(&s, c)).collect();
        assert_eq!(closed, ["thermal", "vision"]);
        assert_eq!(s.gpus[0].closed_by[1], q.project[0]);
        assert_eq!(s.usage.project[0], q.project[1]);
        assert_eq!(text(&s, s.usage.project[1]), "new");
        assert_eq!(s.usage.ended_at, [4, 0], "0: still running");
    }

    #[test]
    fn an_empty_string_is_a_string_like_any_other() {
        let mut host = snapshot(vec![task(1, "", p::Priority::Low, 0)]);
        host.time_zone = String::new();
        let s = wire(&host).unwrap();
        assert_eq!(text(&s, s.time_zone), "");
        assert_eq!(text(&s, s.queue.project[0]), "");
        assert_eq!(text(&s, s.queue.name[0]), "t1");
    }

    #[test]
    fn many_projects_are_each_sent_once() {
        let queue = (0..100)
            .map(|i| task(i, &format!("p{}", i % 40), p::Priority::Low, 0))
            .collect();
        let s = wire(&snapshot(queue)).unwrap();
        let distinct: std::collections::BTreeSet<u32> = s.queue.project.iter().copied().collect();
        assert_eq!(distinct.len(), 40);
        for (i, &p) in s.queue.project.iter().enumerate() {
            assert_eq!(text(&s, p), format!("p{}", i % 40));
        }
    }

    #[test]
    fn text_past_what_a_string_table_can_index_is_refused() {
        let host = snapshot(vec![task(1, &"p".repeat(100), p::Priority::Low, 0)]);
        let e = wire_within(&host, 64).unwrap_err();
        assert!(e.contains("over the 64"), "{e}");
        assert!(wire_within(&host, 1 << 10).is_ok());
    }
}
