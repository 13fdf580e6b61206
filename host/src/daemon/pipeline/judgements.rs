//! How the chain judged each waiting task of one pass, kept by the task's
//! place in the pass's queue: combining a policy's verdicts writes each
//! into its slot, found by walking the queue alongside them (answers come
//! in queue order), not by a map keyed by task id, which was most of
//! combining a pass's few thousand verdicts.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use super::combine::Judgement;

/// A pass's judgements: one per queued task, in the snapshot's queue order,
/// `Eligible(0)` until a policy says otherwise.
#[derive(Debug, Default)]
pub struct Judgements {
    ids: Vec<i64>,
    at: Vec<Judgement>,
    /// Each id's place, made at the first lookup that the walk cannot answer.
    index: OnceLock<FxHashMap<i64, usize>>,
}

/// Where a walk over one answer's verdicts stands: the place after the last
/// one found, or `None` once a verdict came out of queue order (the rest are
/// found through the index, so a walk never scans the queue twice).
#[derive(Debug, Clone, Copy)]
pub struct Walk(Option<usize>);

impl Walk {
    /// A walk from the head of the queue.
    pub fn new() -> Walk {
        Walk(Some(0))
    }
}

impl Default for Walk {
    fn default() -> Walk {
        Walk::new()
    }
}

impl Judgements {
    /// Every task of `ids` (the queue, in order) eligible with score 0.
    pub fn new(ids: Vec<i64>) -> Judgements {
        let at = vec![Judgement::Eligible(0); ids.len()];
        Judgements {
            ids,
            at,
            index: OnceLock::new(),
        }
    }

    /// How many tasks are judged.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no task is judged.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The judgement of the queue's task at `place`.
    pub fn at(&self, place: usize) -> Option<&Judgement> {
        self.at.get(place)
    }

    /// The judgement of task `id`, wherever it is in the queue (`None`: not
    /// in this pass's queue).
    pub fn get(&self, id: i64) -> Option<&Judgement> {
        self.place(id).and_then(|i| self.at.get(i))
    }

    /// The judgement of task `id`, expected at `place` (as when reading the
    /// pass's queue in order), found by id if it is not there.
    pub fn of(&self, place: usize, id: i64) -> Option<&Judgement> {
        match self.ids.get(place) {
            Some(&here) if here == id => self.at.get(place),
            _ => self.get(id),
        }
    }

    /// Adds `scores` (one per place, in queue order) to the tasks still
    /// eligible.
    pub fn add_scores(&mut self, scores: &[i32]) {
        debug_assert_eq!(scores.len(), self.at.len(), "one score per place");
        for (j, &score) in self.at.iter_mut().zip(scores) {
            if let Judgement::Eligible(s) = j {
                *s = s.saturating_add(score as i64);
            }
        }
    }

    /// Each task and its judgement, in queue order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &Judgement)> {
        self.ids.iter().copied().zip(&self.at)
    }

    /// The slot of task `id`, found by `walk` (answers name tasks in queue
    /// order; one that does not is found by id).
    pub fn slot(&mut self, walk: &mut Walk, id: i64) -> Option<(usize, &mut Judgement)> {
        let found = match walk.0 {
            Some(from) => {
                let ahead = self.ids.get(from..).unwrap_or_default();
                match ahead.iter().position(|&x| x == id) {
                    Some(k) => {
                        walk.0 = Some(from + k + 1);
                        Some(from + k)
                    }
                    None => {
                        walk.0 = None;
                        self.place(id)
                    }
                }
            }
            None => self.place(id),
        };
        let i = found?;
        self.at.get_mut(i).map(|j| (i, j))
    }

    fn place(&self, id: i64) -> Option<usize> {
        let index = self
            .index
            .get_or_init(|| self.ids.iter().enumerate().map(|(i, &t)| (t, i)).collect());
        index.get(&id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(j: &Judgements) -> Vec<i64> {
        j.iter()
            .map(|(_, v)| match v {
                Judgement::Eligible(s) => *s,
                _ => -1,
            })
            .collect()
    }

    #[test]
    fn verdicts_in_queue_order_with_gaps_land_in_their_own_slots() {
        let mut j = Judgements::new(vec![10, 20, 30, 40, 50]);
        let mut walk = Walk::new();
        for (id, score) in [(20, 2), (40, 4), (50, 5)] {
            let (_, slot) = j.slot(&mut walk, id).expect("queued");
            *slot = Judgement::Eligible(score);
        }
        assert_eq!(judged(&j), [0, 2, 0, 4, 5]);
        assert!(j.index.get().is_none(), "found by the walk alone");
    }

    #[test]
    fn verdicts_out_of_order_or_repeated_are_still_found_by_id() {
        let mut j = Judgements::new(vec![10, 20, 30, 40, 50]);
        let mut walk = Walk::new();
        for (id, score) in [(50, 5), (10, 1), (30, 3), (10, 11), (40, 4)] {
            let (_, slot) = j.slot(&mut walk, id).expect("queued");
            *slot = Judgement::Eligible(score);
        }
        assert_eq!(judged(&j), [11, 0, 3, 4, 5]);
        assert!(j.slot(&mut walk, 60).is_none(), "not in the queue");
        assert!(j.slot(&mut Walk::new(), 60).is_none());
    }

    #[test]
    fn lookups_by_id_and_by_place_agree_and_fall_back_when_the_place_is_wrong() {
        let mut j = Judgements::new(vec![7, 3, 9]);
        let (_, slot) = j.slot(&mut Walk::new(), 3).expect("queued");
        *slot = Judgement::Rejected("no".into());
        assert_eq!(j.get(3), j.at(1));
        assert_eq!(j.of(1, 3), j.at(1));
        assert_eq!(j.of(0, 3), j.at(1), "a wrong place is looked up by id");
        assert_eq!(j.of(5, 9), Some(&Judgement::Eligible(0)));
        assert_eq!(j.get(4), None);
        assert_eq!((j.len(), j.is_empty()), (3, false));
        assert!(Judgements::default().is_empty());
    }
}
