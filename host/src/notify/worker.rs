//! The delivery thread's loop: every notifier stepped until none has
//! anything due, then a sleep until the earliest retry or a wake-up (the
//! daemon wakes it whenever something changed). At a clean stop the daemon
//! asks it to flush ([`Handle::flush`]): to say when nothing is due before a
//! deadline any more (all delivered, or the next retry later), so the
//! daemon exits with what it could tell told.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::daemon::Daemon;
use crate::time::now_ms;

/// Longest sleep with nothing due: a safety net for a lost wake-up.
const IDLE: Duration = Duration::from_secs(30);

/// The delivery thread's nice value (0 is the daemon's; 19 the least).
const NICE: i32 = 10;

/// Steps per notifier before the others get a turn.
const BURST: usize = 50;

/// What the daemon holds of the delivery thread.
#[derive(Clone)]
pub struct Handle {
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
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Handle {
    /// Wakes the thread: something changed.
    pub fn wake(&self) {
        // A full channel already holds a wake-up.
        let _ = self.wake.try_send(());
    }

    /// Asks the thread to deliver what is pending (and retries that fall
    /// due within `within`) and waits for it, at most `within`; true when
    /// nothing was left due. Blocks: call it off the runtime's thread.
    pub fn flush(&self, within: Duration) -> bool {
        let (done, answer) = std::sync::mpsc::channel();
        let until = now_ms().saturating_add(within.as_millis().min(i64::MAX as u128) as i64);
        *lock(&self.flush) = Some(Flush { until, done });
        self.wake();
        answer.recv_timeout(within).is_ok()
    }
}

/// Starts the delivery thread for `d`.
pub fn spawn(d: Arc<Daemon>) -> std::io::Result<Handle> {
    let (wake, rx) = std::sync::mpsc::sync_channel(1);
    let flush = Arc::new(Mutex::new(None));
    let asked = Arc::clone(&flush);
    std::thread::Builder::new()
        .name("nightjar-notify".into())
        .spawn(move || run(d, rx, asked))?;
    Ok(Handle { wake, flush })
}

/// Runs until `wake`'s sender is dropped (the daemon ends).
fn run(d: Arc<Daemon>, wake: Receiver<()>, asked: Arc<Mutex<Option<Flush>>>) {
    let (cfg, store) = (&d.cfg, d.store_mutex());
    // Telling is background work: the tasks' own runs come first.
    crate::sys::nice_this_thread(NICE);
    let mut notifiers = super::deliver::load_all(cfg);
    for n in &notifiers {
        match n.broken() {
            Some(e) => tracing::error!("notifier {}: cannot deliver: {e}", n.name),
            None => tracing::info!("notifier {} ({}) ready", n.name, n.entry.plugin),
        }
    }
    let mut flushing: Option<Flush> = None;
    loop {
        // A flush asked before this round starts is answered by it (or a later one).
        if let Some(f) = lock(&asked).take() {
            flushing = Some(f);
        }
        let mut earliest: Option<i64> = None;
        for n in notifiers.iter_mut() {
            for turn in 1..=BURST {
                let now = now_ms();
                match super::deliver::step(cfg, store, n) {
                    // Still due after its burst: the loop comes back at once.
                    Some(at) if at <= now && turn == BURST => earliest = Some(now),
                    Some(at) if at <= now => continue,
                    Some(at) => {
                        earliest = Some(earliest.map_or(at, |e| e.min(at)));
                        break;
                    }
                    None => break,
                }
            }
        }
        if let Some(f) = flushing.take_if(|f| earliest.is_none_or(|at| at > f.until)) {
            let _ = f.done.send(());
        }
        let wait = earliest
            .map(|at| Duration::from_millis((at - now_ms()).max(0) as u64))
            .unwrap_or(IDLE)
            .min(IDLE);
        match wake.recv_timeout(wait) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => while wake.try_recv().is_ok() {},
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
