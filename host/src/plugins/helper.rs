//! A second thread for work its caller hands over and waits for within
//! microseconds: the simulator's policy calls (see [`Chain::share_work`]),
//! split between its own thread and this one at every pass.
//!
//! A pass hands over work tens of thousands of times a second, so the
//! hand-off must cost less than a channel's two wake-ups (a thread of its
//! own per member made a 100,000-job simulation half as slow again): each
//! side spins a short while ([`SPIN`]) for the other before it sleeps, and
//! wakes the other only when it sleeps.
//!
//! [`Chain::share_work`]: crate::daemon::pipeline::chain::Chain::share_work

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// How long a side waits for the other spinning before it sleeps: about a
/// pass's work, so the helper spins through the caller's own share of a
/// pass and sleeps once no pass comes.
pub const SPIN: Duration = Duration::from_micros(100);

/// The native stack of the helper's thread: as the main thread's, since
/// plugin calls run on it as they would there.
const STACK: usize = 8 << 20;

type Job = Box<dyn FnOnce() + Send>;

/// What the caller and the helper share.
struct Shared {
    /// Work handed over, in order.
    jobs: Mutex<VecDeque<Job>>,
    /// `jobs` may hold work (set after pushing, cleared before taking).
    ready: AtomicBool,
    /// The helper ends (its owner was dropped).
    stop: AtomicBool,
}

/// A thread that runs what it is handed, one thing at a time, in order.
pub struct Helper {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Work handed to a [`Helper`], to be waited for.
#[must_use = "the work's result is only known by waiting for it"]
pub struct Handed<R>(Arc<Slot<R>>);

/// Where handed work leaves its result.
struct Slot<R> {
    /// The result (`None` once done: the work panicked).
    value: Mutex<Option<R>>,
    /// The work is over.
    done: AtomicBool,
    /// Who waits for it.
    waiter: Thread,
}

/// Spins until `ready` holds or [`SPIN`] has passed: whether it holds.
fn spin_for(ready: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        if ready() {
            return true;
        }
        spins = spins.wrapping_add(1);
        // The clock is read now and then: a read costs more than a spin.
        if spins.is_multiple_of(64) && start.elapsed() >= SPIN {
            return ready();
        }
        std::hint::spin_loop();
    }
}

impl Helper {
    /// Starts the thread, named `name`.
    pub fn start(name: &str) -> std::io::Result<Helper> {
        let shared = Arc::new(Shared {
            jobs: Mutex::new(VecDeque::new()),
            ready: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let mine = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name(name.into())
            .stack_size(STACK)
            .spawn(move || serve(&mine))?;
        Ok(Helper {
            shared,
            thread: Some(thread),
        })
    }

    /// Hands `work` to the helper's thread; its result is waited for with
    /// [`Handed::wait`] (from this thread: it is the one woken).
    pub fn run<R: Send + 'static>(&self, work: impl FnOnce() -> R + Send + 'static) -> Handed<R> {
        let slot = Arc::new(Slot {
            value: Mutex::new(None),
            done: AtomicBool::new(false),
            waiter: thread::current(),
        });
        let theirs = Arc::clone(&slot);
        let job: Job = Box::new(move || {
            // A panic is the waiter's to see (no value), not the helper's end.
            let value = catch_unwind(AssertUnwindSafe(work)).ok();
            *theirs.value.lock().unwrap_or_else(PoisonError::into_inner) = value;
            theirs.done.store(true, Ordering::Release);
            theirs.waiter.unpark();
        });
        let shared = &self.shared;
        (shared.jobs.lock().unwrap_or_else(PoisonError::into_inner)).push_back(job);
        shared.ready.store(true, Ordering::Release);
        if let Some(t) = &self.thread {
            // A mark only (no system call) while the helper spins.
            t.thread().unpark();
        }
        Handed(slot)
    }
}

/// The helper's loop: the jobs handed over, in order, until told to stop.
fn serve(shared: &Shared) {
    loop {
        let waiting =
            || shared.ready.load(Ordering::Acquire) || shared.stop.load(Ordering::Acquire);
        while !spin_for(waiting) {
            thread::park();
        }
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        shared.ready.store(false, Ordering::Release);
        loop {
            let job = (shared.jobs.lock().unwrap_or_else(PoisonError::into_inner)).pop_front();
            match job {
                Some(job) => job(),
                None => break,
            }
        }
    }
}

impl<R> Handed<R> {
    /// Waits for the work: its result, or `None` if it panicked.
    pub fn wait(self) -> Option<R> {
        let slot = &self.0;
        let done = || slot.done.load(Ordering::Acquire);
        while !spin_for(done) {
            thread::park();
        }
        (slot.value.lock().unwrap_or_else(PoisonError::into_inner)).take()
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handed_work_runs_on_the_helpers_thread_in_order_and_returns_its_result() {
        let helper = Helper::start("helper-test").unwrap();
        let me = thread::current().id();
        let a = helper.run(move || (thread::current().id() != me, 1));
        let b = helper.run(|| thread::current().name().map(str::to_owned));
        assert_eq!(a.wait(), Some((true, 1)));
        assert_eq!(b.wait(), Some(Some("helper-test".to_owned())));
    }

    #[test]
    fn a_panic_in_handed_work_is_the_waiters_to_see_and_the_helper_goes_on() {
        let helper = Helper::start("helper-test").unwrap();
        let bad = helper.run(|| -> u32 { panic!("a panic in handed work") });
        assert_eq!(bad.wait(), None);
        assert_eq!(helper.run(|| 7).wait(), Some(7));
    }

    #[test]
    fn a_helper_that_slept_past_its_spin_is_woken_by_new_work() {
        let helper = Helper::start("helper-test").unwrap();
        for _ in 0..3 {
            thread::sleep(SPIN * 20);
            assert_eq!(helper.run(|| 2 + 2).wait(), Some(4));
        }
        // Long work: the waiter sleeps past its own spin and is woken.
        let slow = helper.run(|| {
            thread::sleep(SPIN * 20);
            "slow"
        });
        assert_eq!(slow.wait(), Some("slow"));
    }

    #[test]
    fn dropping_the_helper_ends_its_thread() {
        let helper = Helper::start("helper-test").unwrap();
        let shared = Arc::downgrade(&helper.shared);
        drop(helper);
        assert!(
            shared.upgrade().is_none(),
            "the thread held the last other reference"
        );
    }
}
