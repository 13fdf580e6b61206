//! Backfill candidates a pass already knows must wait.
//!
//! Once the head of the order holds its reservation, [`Easy::decide`]
//! starts a later job only if it ends by the head's start (and fits now),
//! or fits on what the head will not need then. The job's run time enters
//! only the first test, which a longer run cannot pass where a shorter one
//! failed and a run of unknown length never passes; the second depends on
//! its resources and the pool alone. A job that waits leaves the pool as it
//! found it (without GPU sharing a placement takes only idle GPUs, and
//! giving it back makes them idle again), so until something starts, a job
//! asking exactly the resources of one that waited, for at least as long,
//! gets the same answer, and the simulator need not ask. A forecast of a
//! thousand waiting tasks on a few free GPUs asked about twenty times a
//! pass, each answer a placement tried and undone.
//!
//! [`Easy::decide`]: crate::scheduler::backfill::Easy::decide

/// What waited in this pass since the last start, by the resources asked.
#[derive(Debug, Default)]
pub(super) struct HeldBack {
    waited: Vec<Waited>,
}

/// The jobs asking one set of resources that waited.
#[derive(Debug)]
struct Waited {
    /// One of them (its resources stand for all).
    job: usize,
    /// The shortest known run time among them.
    least: Option<i64>,
    /// Whether one of unknown run time waited.
    unknown: bool,
}

impl HeldBack {
    /// Forgets everything: a job started, so the pool changed.
    pub(super) fn clear(&mut self) {
        self.waited.clear();
    }

    /// Whether a job asking what `same` accepts, running `estimate` ms
    /// (`None`: not known), must wait as one already did.
    pub(super) fn must_wait(&self, same: impl Fn(usize) -> bool, estimate: Option<i64>) -> bool {
        self.waited.iter().find(|w| same(w.job)).is_some_and(|w| {
            let shorter_waited = w.least.is_some_and(|l| estimate.is_none_or(|e| l <= e));
            shorter_waited || (estimate.is_none() && w.unknown)
        })
    }

    /// Notes that `job`, asking what `same` accepts, running `estimate`,
    /// waits.
    pub(super) fn waited(
        &mut self,
        job: usize,
        same: impl Fn(usize) -> bool,
        estimate: Option<i64>,
    ) {
        let at = match self.waited.iter().position(|w| same(w.job)) {
            Some(at) => at,
            None => {
                self.waited.push(Waited {
                    job,
                    least: None,
                    unknown: false,
                });
                self.waited.len() - 1
            }
        };
        let w = &mut self.waited[at];
        match estimate {
            Some(e) => w.least = Some(w.least.map_or(e, |l| l.min(e))),
            None => w.unknown = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HeldBack;

    #[test]
    fn only_as_long_or_longer_runs_of_the_same_resources_are_known_to_wait() {
        let mut h = HeldBack::default();
        // Jobs 0 and 2 ask the same resources (say, one GPU), job 1 others.
        let same_as = |k: usize| move |j: usize| j % 2 == k % 2;
        assert!(!h.must_wait(same_as(0), Some(10)), "nothing waited yet");
        h.waited(0, same_as(0), Some(60));
        assert!(h.must_wait(same_as(2), Some(60)), "as long");
        assert!(h.must_wait(same_as(2), Some(90)), "longer");
        assert!(h.must_wait(same_as(2), None), "unknown length");
        assert!(
            !h.must_wait(same_as(2), Some(59)),
            "shorter: may end in time"
        );
        assert!(!h.must_wait(same_as(1), Some(90)), "other resources");
        h.waited(1, same_as(1), None);
        assert!(h.must_wait(same_as(1), None));
        assert!(
            !h.must_wait(same_as(1), Some(1_000_000)),
            "an unknown run's wait says nothing of a known one"
        );
        h.clear();
        assert!(!h.must_wait(same_as(2), Some(90)), "a start forgets all");
    }
}
