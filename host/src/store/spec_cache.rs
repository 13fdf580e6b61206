//! The scheduler reads every queued task's spec at every pass; decoding
//! 10,000 specs from JSON each time was most of a pass. Specs do not change
//! once submitted (a priority change rewrites the spec and the `priority`
//! column together), so decoded specs are kept across passes, keyed by task
//! and checked against the row's `priority` and the spec's length in bytes
//! (both kept in the `tasks_queue` index, so a pass reads no task's row):
//! a row whose spec was rewritten is decoded again.

use std::collections::HashMap;
use std::sync::Arc;

use crate::task::model::TaskSpec;

/// Specs decoded between two cuts of the cache to the queued tasks: the
/// cache holds at most the queue as of the last cut plus this many.
const SLACK: usize = 4096;

/// What a cached spec was decoded from: the row's priority column and the
/// spec's length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    /// `tasks.priority`.
    pub priority: i64,
    /// `length(CAST(tasks.spec AS BLOB))`.
    pub bytes: i64,
}

/// Decoded specs by task id.
#[derive(Debug, Default)]
pub(super) struct SpecCache {
    specs: HashMap<i64, (Stamp, Arc<TaskSpec>)>,
    /// Specs kept since the cache was last cut to the queue.
    fresh: usize,
}

impl SpecCache {
    /// The cached spec of `task`, if it was decoded from a row with `stamp`.
    pub fn get(&self, task: i64, stamp: Stamp) -> Option<Arc<TaskSpec>> {
        self.specs
            .get(&task)
            .filter(|(s, _)| *s == stamp)
            .map(|(_, spec)| Arc::clone(spec))
    }

    /// The spec of `task` kept last, whatever row it came from.
    pub fn latest(&self, task: i64) -> Option<Arc<TaskSpec>> {
        self.specs.get(&task).map(|(_, spec)| Arc::clone(spec))
    }

    /// Keeps `spec`, decoded from a row with `stamp`.
    pub fn put(&mut self, task: i64, stamp: Stamp, spec: Arc<TaskSpec>) {
        self.specs.insert(task, (stamp, spec));
        self.fresh += 1;
    }

    /// Whether more than the slack was kept since the cache was last cut to
    /// the queue: then the specs of tasks that left it (started, cancelled)
    /// are dropped. Counting decodes, not reads, bounds it however the queue
    /// is read (a backlog longer than any pass reads included).
    pub fn grown(&self) -> bool {
        self.fresh > SLACK
    }

    /// Keeps only the specs of `queued` (every queued task).
    pub fn retain(&mut self, queued: &std::collections::HashSet<i64>) {
        self.specs.retain(|id, _| queued.contains(id));
        self.fresh = 0;
    }

    /// How many specs are kept (for tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.specs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{store, submit};
    use super::*;
    use crate::task::model::Priority;

    #[test]
    fn a_queued_spec_is_decoded_once_and_shared_by_later_reads() {
        let (_dir, mut s) = store();
        submit(&mut s, "command = \"true\"\n");
        let first = s.candidates(2_000, 10, 0).unwrap();
        let again = s.candidates(2_000, 10, 0).unwrap();
        let by_id = s.candidates_by_ids(2_000, &[first[0].id]).unwrap();
        assert!(Arc::ptr_eq(&first[0].spec, &again[0].spec));
        assert!(Arc::ptr_eq(&first[0].spec, &by_id[&first[0].id].spec));
    }

    #[test]
    fn a_spec_with_text_beyond_ascii_is_stamped_in_bytes_and_decoded_once() {
        let (_dir, mut s) = store();
        // A command with characters of two, three and four bytes: a stamp in characters
        // (`length(spec)`) would never match the decoded text's byte
        // length, and every pass would decode the spec again.
        let ids = submit(&mut s, "name = \"r\"\ncommand = \"echo résumé 実験 🐦\"\n");
        let (bytes, chars): (i64, i64) = s
            .conn
            .query_row(
                "SELECT length(CAST(spec AS BLOB)), length(spec) FROM tasks WHERE id = ?1",
                [ids[0]],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert!(bytes > chars, "{bytes} bytes, {chars} characters");
        let first = s.candidates(2_000, 10, 0).unwrap();
        assert!(
            first[0]
                .spec
                .command
                .to_argv()
                .concat()
                .contains("résumé 実験 🐦")
        );
        let again = s.candidates(2_000, 10, 0).unwrap();
        let by_id = s.candidates_by_ids(2_000, &ids).unwrap();
        assert!(Arc::ptr_eq(&first[0].spec, &again[0].spec), "decoded again");
        assert!(Arc::ptr_eq(&first[0].spec, &by_id[&ids[0]].spec));
    }

    #[test]
    fn a_priority_change_rewrites_the_spec_and_the_next_read_sees_it() {
        let (_dir, mut s) = store();
        let ids = submit(&mut s, "command = \"true\"\n");
        let before = s.candidates(2_000, 10, 0).unwrap();
        assert_eq!(before[0].spec.priority, Priority::Normal);
        s.set_priority(ids[0], Priority::High, 2_000).unwrap();
        let after = s.candidates(2_000, 10, 0).unwrap();
        assert_eq!(after[0].spec.priority, Priority::High);
        let by_id = s.candidates_by_ids(2_000, &ids).unwrap();
        assert_eq!(by_id[&ids[0]].spec.priority, Priority::High);
    }

    #[test]
    fn a_backlog_never_read_whole_does_not_keep_the_specs_of_tasks_that_left_it() {
        let (dir, mut s) = store();
        let n = SLACK + 300;
        let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        submit(
            &mut s,
            &format!(
                "command = \"echo ${{x}}\"\n[sweep]\nx = [{}]\n",
                values.join(", ")
            ),
        );
        // A pass with one free slot reads one task (never the whole queue)
        // and starts it.
        for _ in 0..n {
            let c = s.candidates(2_000, 1, 0).unwrap();
            s.claim(c[0].id, &super::super::NewRun::default(), dir.path(), 2_000)
                .unwrap()
                .unwrap();
        }
        let kept = s.specs.borrow().len();
        assert!(kept <= SLACK + 1, "{kept} specs kept with nothing queued");
    }

    #[test]
    fn the_cache_is_cut_to_the_queue_once_more_than_the_slack_was_decoded() {
        let (_dir, mut s) = store();
        submit(&mut s, "command = \"true\"\n");
        let spec = Arc::clone(&s.candidates(2_000, 10, 0).unwrap()[0].spec);
        let mut c = SpecCache::default();
        let stamp = Stamp {
            priority: 0,
            bytes: 1,
        };
        for id in 0..SLACK as i64 {
            c.put(id, stamp, Arc::clone(&spec));
        }
        assert!(!c.grown(), "within the slack: no cut yet");
        c.put(SLACK as i64, stamp, Arc::clone(&spec));
        assert!(c.grown(), "past the slack: cut at the next read");
        let queued: std::collections::HashSet<i64> = (0..10).collect();
        c.retain(&queued);
        assert_eq!(c.len(), 10, "only the queued tasks' specs are kept");
        assert!(!c.grown(), "the count starts over after a cut");
        assert!(c.get(3, stamp).is_some());
        assert!(
            c.get(3, Stamp { bytes: 2, ..stamp }).is_none(),
            "a spec of another length is not this one"
        );
    }
}
