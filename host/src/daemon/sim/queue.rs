//! The policies' queue kept from one chain pass of a simulation to the
//! next. A pass's queue is the waiting jobs' head in the built-in order;
//! between two passes a few jobs start and a few arrive, so the last
//! pass's queue is edited (those gone dropped, the new ones put in their
//! places) rather than built again task by task and dropped whole, which
//! was about a tenth of a forecast's pass. Its GPUs come back with it,
//! to be updated in place.

use std::sync::Arc;

use crate::plugins::policy as p;

/// The last pass's queue, and each of its tasks' job.
#[derive(Default)]
pub(super) struct KeptQueue {
    /// The last pass's snapshot: its queue is taken back once the pass is
    /// over (and nothing else holds it).
    last: Option<Arc<p::Snapshot>>,
    /// The job of each task of that queue, in its order.
    jobs: Vec<usize>,
    /// Per job, the pass that last put it in the queue ([`KeptQueue::stamp`]).
    seen: Vec<u64>,
    stamp: u64,
    /// The last pass's GPUs, taken back with its queue.
    gpus: Vec<p::Gpu>,
}

impl KeptQueue {
    /// This pass's queue: the tasks of `heads` (jobs, in the queue's order,
    /// which is the order the jobs always keep), each made by `make` unless
    /// the last pass's queue holds it.
    pub(super) fn queue(
        &mut self,
        heads: &[usize],
        jobs: usize,
        mut make: impl FnMut(usize) -> p::QueuedTask,
    ) -> Vec<p::QueuedTask> {
        let mut kept = match self.last.take().map(Arc::try_unwrap) {
            Some(Ok(s)) => {
                self.gpus = s.gpus;
                s.queue
            }
            // Still held elsewhere (or the first pass): made afresh.
            _ => {
                self.jobs.clear();
                Vec::new()
            }
        };
        debug_assert_eq!(kept.len(), self.jobs.len());
        self.seen.resize(jobs, 0);
        self.stamp += 1;
        for &i in heads {
            self.seen[i] = self.stamp;
        }
        // Those no longer at the head are dropped; the rest keep their order.
        let (seen, stamp) = (&self.seen, self.stamp);
        let mut at = self.jobs.iter();
        kept.retain(|_| at.next().is_some_and(|&j| seen[j] == stamp));
        self.jobs.retain(|&j| seen[j] == stamp);
        if kept.len() < heads.len() {
            // The kept are in the heads' order: each moved once, the new made.
            let mut old = kept.into_iter().zip(self.jobs.iter().copied()).peekable();
            let mut queue = Vec::with_capacity(heads.len());
            for &i in heads {
                match old.next_if(|(_, j)| *j == i) {
                    Some((t, _)) => queue.push(t),
                    None => queue.push(make(i)),
                }
            }
            kept = queue;
        }
        self.jobs.clear();
        self.jobs.extend_from_slice(heads);
        kept
    }

    /// The last pass's GPUs when its snapshot came back with its queue
    /// (called after [`KeptQueue::queue`]; else none).
    pub(super) fn take_gpus(&mut self) -> Vec<p::Gpu> {
        std::mem::take(&mut self.gpus)
    }

    /// Keeps `snapshot` (this pass's) to take its queue back at the next.
    pub(super) fn keep(&mut self, snapshot: &Arc<p::Snapshot>) {
        self.last = Some(Arc::clone(snapshot));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::tests::{snapshot, task};

    fn ids(q: &[p::QueuedTask]) -> Vec<i64> {
        q.iter().map(|t| t.id).collect()
    }

    /// A pass: the queue of `heads` (job i is task 100 + i), counting the
    /// tasks made anew, then kept as the last snapshot (held elsewhere too
    /// when `shared`).
    fn pass(
        k: &mut KeptQueue,
        heads: &[usize],
        shared: bool,
    ) -> (Vec<i64>, usize, Arc<p::Snapshot>) {
        let mut made = 0;
        let q = k.queue(heads, 20, |i| {
            made += 1;
            task(100 + i as i64, "p", p::Priority::Normal, 0)
        });
        let got = ids(&q);
        let s = Arc::new(p::Snapshot {
            queue: q,
            ..snapshot(Vec::new())
        });
        k.keep(&s);
        let held = if shared {
            Arc::clone(&s)
        } else {
            Arc::new(snapshot(Vec::new()))
        };
        (got, made, held)
    }

    #[test]
    fn a_queue_is_edited_from_the_last_pass_making_only_the_new_tasks() {
        let mut k = KeptQueue::default();
        let (q, made, _) = pass(&mut k, &[1, 2, 3, 4], false);
        assert_eq!((q, made), (vec![101, 102, 103, 104], 4));
        // 2 and 4 started; 0 and 5 arrived, at the head and the tail; 7 between.
        let (q, made, _) = pass(&mut k, &[0, 1, 3, 5], false);
        assert_eq!((q, made), (vec![100, 101, 103, 105], 2));
        let (q, made, _) = pass(&mut k, &[0, 1, 3, 5], false);
        assert_eq!(
            (q, made),
            (vec![100, 101, 103, 105], 0),
            "unchanged: nothing made"
        );
        let (q, made, _) = pass(&mut k, &[3], false);
        assert_eq!((q, made), (vec![103], 0), "only removals");
        let (q, made, _) = pass(&mut k, &[], false);
        assert_eq!((q, made), (vec![], 0));
        let (q, made, _) = pass(&mut k, &[6, 7], false);
        assert_eq!((q, made), (vec![106, 107], 2));
    }

    #[test]
    fn a_snapshot_still_held_elsewhere_is_not_taken_back_and_the_queue_is_made_afresh() {
        let mut k = KeptQueue::default();
        let (_, _, held) = pass(&mut k, &[1, 2], true);
        let (q, made, _) = pass(&mut k, &[1, 2, 3], false);
        assert_eq!((q, made), (vec![101, 102, 103], 3));
        assert_eq!(ids(&held.queue), [101, 102], "the held one is untouched");
    }
}
