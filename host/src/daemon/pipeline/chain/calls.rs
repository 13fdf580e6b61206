//! One pass's calls to the chain's members: all sent at once (each worker
//! on its thread in the daemon), or, for members on the caller's thread,
//! split between it and the chain's helper thread ([`Chain::share_work`]).

use std::sync::Arc;
use std::time::Duration;

use super::{Chain, Member};
use crate::plugins::helper::Helper;
use crate::plugins::pass::Pass;
use crate::plugins::policy::PluginError;
use crate::plugins::worker::{CallReport, Pending, Worker};

/// Below this much work a pass (its members' recent calls together), the
/// hand-off to the helper costs more than it saves: all run here.
const WORTH_SHARING: Duration = Duration::from_micros(20);

/// How much of each new call's time a member's cost takes in (of 16).
const COST_WEIGHT: u32 = 4;

impl Chain {
    /// Runs some of the members on a second thread at each pass, so that
    /// a pass takes about half its members' time on a machine with two
    /// cores or more. For a chain loaded with [`Chain::load_here`] (the
    /// simulator, which asks at every event it plays); the members' answers
    /// are the same on either thread (each has its own instance and draws
    /// from the snapshot's seed). Without a second thread (it could not be
    /// started) every member runs on the caller's, as before.
    pub fn share_work(&mut self) {
        if !self.here || self.helper.is_some() {
            return;
        }
        // One core: the two threads would take turns, and hand over too.
        if std::thread::available_parallelism().is_ok_and(|n| n.get() < 2) {
            return;
        }
        match Helper::start("plugin-helper") {
            Ok(h) => self.helper = Some(h),
            Err(e) => tracing::warn!("policies run on one thread: no helper thread ({e})"),
        }
    }

    /// Calls every member that is not disabled with `pass`: its report,
    /// or `None` for a member with no worker (disabled or not loaded).
    pub(super) fn call_members(&mut self, pass: &Arc<Pass>) -> Vec<Option<CallReport>> {
        let workers: Vec<Option<Arc<Worker>>> = (self.members.iter())
            .map(|m| (!m.disabled).then(|| m.worker.clone()).flatten())
            .collect();
        let costs = costs(&self.members, &workers);
        let shared_with = (self.helper.as_ref()).and_then(|h| Some((h, plan(&costs)?)));
        let reports = match shared_with {
            Some((helper, away)) => {
                self.handed += away.iter().filter(|a| **a).count() as u64;
                shared(helper, &away, workers, pass)
            }
            None => {
                let pending: Vec<Option<Pending>> = (workers.iter())
                    .map(|w| w.as_ref().map(|w| w.submit(Arc::clone(pass))))
                    .collect();
                pending.into_iter().map(|p| p.map(Pending::wait)).collect()
            }
        };
        for (m, r) in self.members.iter_mut().zip(&reports) {
            if let Some(r) = r {
                m.cost = (m.cost * (16 - COST_WEIGHT) + r.wall * COST_WEIGHT) / 16;
            }
        }
        reports
    }

    /// For tests: every pass on this thread (of a chain with a helper) is
    /// shared, member `i` on the helper's thread if bit `i` of `mask` is
    /// set, whatever the members' costs; `None`: as measured.
    #[cfg(test)]
    pub(crate) fn hand_away_in_tests(mask: Option<u64>) {
        AWAY.set(mask);
    }

    /// For tests: every pass on this thread with two members or more is
    /// split by their costs, whatever their sum ([`WORTH_SHARING`] aside).
    #[cfg(test)]
    pub(crate) fn share_every_pass_in_tests(on: bool) {
        EVERY_PASS.set(on);
    }

    /// How many member calls ran on the helper's thread so far.
    pub fn calls_handed(&self) -> u64 {
        self.handed
    }
}

/// Each member's recent cost, `None` for one with no worker to call.
fn costs(members: &[Member], workers: &[Option<Arc<Worker>>]) -> Vec<Option<Duration>> {
    (members.iter().zip(workers))
        .map(|(m, w)| w.as_ref().map(|_| m.cost))
        .collect()
}

/// Which members a pass hands to the helper, if it is shared at all.
fn plan(costs: &[Option<Duration>]) -> Option<Vec<bool>> {
    #[cfg(test)]
    if let Some(mask) = AWAY.get() {
        return Some((0..costs.len()).map(|i| mask >> i & 1 == 1).collect());
    }
    #[cfg(test)]
    if EVERY_PASS.get() && costs.iter().flatten().count() > 1 {
        return Some(away(costs));
    }
    worth_sharing(costs).then(|| away(costs))
}

#[cfg(test)]
thread_local! {
    /// For tests: every pass on this thread is shared, member `i` on the
    /// helper's thread if bit `i` is set, whatever the members' costs.
    static AWAY: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    /// For tests: every pass on this thread with two members is split by
    /// their costs, however small (so whether one is does not depend on
    /// how fast the machine runs them).
    static EVERY_PASS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a pass has two members to call and enough work to share.
fn worth_sharing(costs: &[Option<Duration>]) -> bool {
    costs.iter().flatten().count() > 1 && costs.iter().flatten().sum::<Duration>() >= WORTH_SHARING
}

/// Which members the helper takes: the costliest first, each to the side
/// with less work so far (longest processing time first).
fn away(costs: &[Option<Duration>]) -> Vec<bool> {
    let mut order: Vec<(usize, Duration)> = (costs.iter().enumerate())
        .filter_map(|(i, c)| Some((i, (*c)?)))
        .collect();
    order.sort_by_key(|&(i, c)| (std::cmp::Reverse(c), i));
    let (mut here, mut there) = (Duration::ZERO, Duration::ZERO);
    let mut away = vec![false; costs.len()];
    for (i, c) in order {
        // Ties stay here.
        if there < here {
            there += c;
            away[i] = true;
        } else {
            here += c;
        }
    }
    away
}

/// The members' calls, those `away` on `helper`'s thread and the rest on
/// this one, at once.
fn shared(
    helper: &Helper,
    away: &[bool],
    workers: Vec<Option<Arc<Worker>>>,
    pass: &Arc<Pass>,
) -> Vec<Option<CallReport>> {
    for w in workers.iter().flatten() {
        w.prepare(pass);
    }
    let theirs: Vec<(usize, Arc<Worker>)> = (workers.iter().enumerate())
        .filter(|(i, _)| away[*i])
        .filter_map(|(i, w)| Some((i, Arc::clone(w.as_ref()?))))
        .collect();
    let sent = Arc::clone(pass);
    let handed = helper.run(move || {
        (theirs.into_iter())
            .map(|(i, w)| (i, w.submit(Arc::clone(&sent)).wait()))
            .collect::<Vec<_>>()
    });
    let mut reports: Vec<Option<CallReport>> = (workers.iter().enumerate())
        .map(|(i, w)| match w {
            Some(w) if !away[i] => Some(w.submit(Arc::clone(pass)).wait()),
            _ => None,
        })
        .collect();
    match handed.wait() {
        Some(done) => {
            for (i, r) in done {
                reports[i] = Some(r);
            }
        }
        // A worker on the caller's thread catches its calls' panics: this
        // is the helper's own code failing; its members count a failure.
        None => {
            for i in (0..away.len()).filter(|&i| away[i]) {
                reports[i] = Some(CallReport {
                    result: Err(PluginError::Trap("the host panicked in its call".into())),
                    cpu: Duration::ZERO,
                    wall: Duration::ZERO,
                    ended: false,
                });
            }
        }
    }
    reports
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn us(n: u64) -> Option<Duration> {
        Some(Duration::from_micros(n))
    }

    #[test]
    fn the_helper_takes_the_members_that_even_out_the_two_threads_work() {
        // The costliest stays here, the next goes there, then each to the
        // side with less so far: 30 | 25, then 20 there (45), 10 here (40).
        assert_eq!(
            away(&[us(10), us(30), None, us(20), us(25)]),
            [false, false, false, true, true]
        );
        // Equal costs alternate, the first staying here.
        assert_eq!(away(&[us(5); 4]), [false, true, false, true]);
        assert_eq!(away(&[None, us(7)]), [false, false]);
    }

    #[test]
    fn only_a_pass_with_two_members_and_enough_work_is_shared() {
        assert!(worth_sharing(&[us(15), None, us(15)]));
        assert!(!worth_sharing(&[us(15), us(4)]), "less than WORTH_SHARING");
        assert!(!worth_sharing(&[us(900), None]), "one member");
        assert!(!worth_sharing(&[None, None]));
    }
}
