//! The delivery threads: one per notifier (its lane), so one notifier that
//! hangs or backs off never delays another's deliveries. Each lane steps its
//! notifier until nothing is due, then sleeps until its next retry or a
//! wake-up (the daemon wakes every lane whenever something changed). At a
//! clean stop the daemon asks them to flush ([`Handle::flush`]): to say when
//! nothing is due before a deadline any more (all delivered, or the next
//! retry later), so the daemon exits with what it could tell told.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::deliver::Configured;
use crate::config::Config;
use crate::store::Store;
use crate::sync::LockUnpoisoned;
use crate::time::now_ms;

/// What the delivery threads need of their host (the daemon): its config
/// and its store. Notifications name no daemon type, so the layering rule
/// "notify does not use daemon" holds.
pub trait NotifyHost: Send + Sync + 'static {
    /// The config the notifiers come from.
    fn config(&self) -> &Config;
    /// The store whose outbox they deliver (taken for each step, never
    /// held while a notifier runs).
    fn outbox_store(&self) -> &Mutex<Store>;
}

/// Longest sleep with nothing due: a safety net for a lost wake-up.
const IDLE: Duration = Duration::from_secs(30);

/// The delivery threads' nice value (0 is the daemon's; 19 the least).
const NICE: i32 = 10;

/// Steps in a row before a lane looks at its wake-ups and flushes again.
const BURST: usize = 50;

/// What the daemon holds of the delivery threads.
#[derive(Clone)]
pub struct Handle {
    lanes: Arc<Vec<Lane>>,
}

/// One notifier's thread, as the daemon reaches it.
struct Lane {
    wake: SyncSender<()>,
    flush: Arc<Mutex<Option<Flush>>>,
}

/// A stop's request: say on `done` once nothing is due before `until`.
struct Flush {
    /// Unix ms.
    until: i64,
    done: Sender<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock_unpoisoned()
}

impl Handle {
    /// Wakes every lane: something changed.
    pub fn wake(&self) {
        for l in self.lanes.iter() {
            // A full channel already holds a wake-up.
            let _ = l.wake.try_send(());
        }
    }

    /// Asks every lane to deliver what is pending (and retries that fall
    /// due within `within`) and waits for them, at most `within`; true when
    /// nothing was left due in any. Blocks: call it off the runtime's thread.
    pub fn flush(&self, within: Duration) -> bool {
        let (done, answers) = std::sync::mpsc::channel();
        let until = now_ms().saturating_add(within.as_millis().min(i64::MAX as u128) as i64);
        for l in self.lanes.iter() {
            *lock(&l.flush) = Some(Flush {
                until,
                done: done.clone(),
            });
        }
        drop(done);
        self.wake();
        let deadline = Instant::now() + within;
        (0..self.lanes.len()).all(|_| {
            answers
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .is_ok()
        })
    }
}

/// Starts a delivery thread for each of `d`'s notifiers.
pub fn spawn<H: NotifyHost>(d: Arc<H>) -> std::io::Result<Handle> {
    let mut lanes = Vec::new();
    for n in super::deliver::load_all(d.config()) {
        match n.broken() {
            Some(e) => tracing::error!("notifier {}: cannot deliver: {e}", n.name),
            None => tracing::info!("notifier {} ({}) ready", n.name, n.entry.plugin),
        }
        let (wake, rx) = std::sync::mpsc::sync_channel(1);
        let flush = Arc::new(Mutex::new(None));
        let (asked, d) = (Arc::clone(&flush), Arc::clone(&d));
        std::thread::Builder::new()
            .name(format!("notify-{}", n.name))
            .spawn(move || run(d, n, rx, asked))?;
        lanes.push(Lane { wake, flush });
    }
    Ok(Handle {
        lanes: Arc::new(lanes),
    })
}

/// One lane: runs until its wake-up's sender is dropped (the daemon ends).
fn run<H: NotifyHost>(
    d: Arc<H>,
    mut n: Configured,
    wake: Receiver<()>,
    asked: Arc<Mutex<Option<Flush>>>,
) {
    let (cfg, store) = (d.config(), d.outbox_store());
    // Telling is background work: the tasks' own runs come first.
    crate::sys::nice_this_thread(NICE);
    let mut flushing: Option<Flush> = None;
    loop {
        // A flush asked before this round starts is answered by it (or a later one).
        if let Some(f) = lock(&asked).take() {
            flushing = Some(f);
        }
        let mut next: Option<i64> = None;
        for turn in 1..=BURST {
            let now = now_ms();
            match super::deliver::step(cfg, store, &mut n) {
                // Still due after its burst: the loop comes back at once.
                Some(at) if at <= now && turn == BURST => next = Some(now),
                Some(at) if at <= now => continue,
                Some(at) => {
                    next = Some(at);
                    break;
                }
                None => break,
            }
        }
        if let Some(f) = flushing.take_if(|f| next.is_none_or(|at| at > f.until)) {
            let _ = f.done.send(());
        }
        let wait = next
            .map(|at| Duration::from_millis((at - now_ms()).max(0) as u64))
            .unwrap_or(IDLE)
            .min(IDLE);
        match wake.recv_timeout(wait) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => while wake.try_recv().is_ok() {},
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
