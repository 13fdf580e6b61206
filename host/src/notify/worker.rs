//! The delivery thread's loop: every notifier stepped until none has
//! anything due, then a sleep until the earliest retry or a wake-up (the
//! daemon wakes it whenever something changed).

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use crate::daemon::Daemon;
use crate::time::now_ms;

/// Longest sleep with nothing due: a safety net for a lost wake-up.
const IDLE: Duration = Duration::from_secs(30);

/// The delivery thread's nice value (0 is the daemon's; 19 the least).
const NICE: i32 = 10;

/// Steps per notifier before the others get a turn.
const BURST: usize = 50;

/// Runs until `wake`'s sender is dropped (the daemon ends).
pub fn run(d: Arc<Daemon>, wake: Receiver<()>) {
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
    loop {
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
