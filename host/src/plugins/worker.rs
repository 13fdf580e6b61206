//! A plugin on a thread of its own, behind a watchdog. The thread compiles,
//! instantiates and configures the plugin, then serves `evaluate` calls; the
//! caller waits for each answer at most the watchdog's time. A call that does
//! not come back in time (stuck in a host call the epoch deadline cannot
//! reach) is abandoned: the caller drops the worker and never joins its
//! thread, which exits on its own if the call ever returns.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::engine::PluginEngine;
use super::limits::PluginLimits;
use super::pass::Pass;
use super::policy::{Evaluation, PluginError, PolicyPlugin, Snapshot};
use super::version::Detected;

pub use super::budget::{Budget, Kind, abandoned_threads};

/// What one call cost and gave.
#[derive(Debug)]
pub struct CallReport {
    /// The answer (checked against the snapshot), or why there is none.
    pub result: Result<Evaluation, PluginError>,
    /// CPU time the plugin's thread spent on the call (a worker on its
    /// caller's thread reports its wall time: never less).
    pub cpu: Duration,
    /// Wall time from sending the call to its answer.
    pub wall: Duration,
    /// The worker is gone (its thread ended, or a panic in the host's side
    /// of a call dropped its plugin): its owner starts it again.
    pub ended: bool,
}

type Reply = mpsc::SyncSender<CallReport>;

/// A live plugin: on a thread of its own, or (for the simulator) on its
/// caller's.
pub struct Worker {
    runs: Runs,
    limits: PluginLimits,
    /// sha256 of the component.
    pub sha256: String,
    /// The version of the contract it implements.
    pub version: Detected,
}

/// Where a worker's calls run.
enum Runs {
    /// On its own thread, behind the watchdog (the daemon).
    Thread {
        jobs: mpsc::Sender<(Arc<Pass>, Reply)>,
        life: Arc<Life>,
    },
    /// On the caller's thread (or the thread it hands the call to, see
    /// `plugins::helper`), under the epoch deadline alone: no thread
    /// hand-off per call (two wake-ups, most of a small pass's cost).
    /// For `nightjar simulate`, which asks the chain at every event. A
    /// policy reaches no host call that can block (`log`, `plugin-name` and
    /// `tariff` are computed and bounded; WASI's blocking imports trap, see
    /// `wasi.rs`), so the epoch deadline alone ends any call.
    Here(Box<std::sync::Mutex<Option<PolicyPlugin>>>),
}

/// An `evaluate` in flight, or (on the caller's thread) already answered.
pub struct Pending(Waiting);

enum Waiting {
    Sent {
        rx: mpsc::Receiver<CallReport>,
        life: Arc<Life>,
        sent: Instant,
        watchdog: Duration,
    },
    Answered(CallReport),
}

/// The CPU time this thread has used.
fn thread_cpu() -> Duration {
    crate::sys::thread_cpu()
}

/// A plugin thread's life: running, abandoned by its caller, or ended. An
/// abandoned thread counts in its [`Budget`] until it ends.
struct Life(AtomicU8, Budget);

impl Life {
    fn new(budget: Budget) -> Life {
        Life(AtomicU8::new(RUNNING), budget)
    }
}

const RUNNING: u8 = 0;
const ABANDONED_STATE: u8 = 1;
const ENDED: u8 = 2;

impl Life {
    fn abandon(&self) {
        if self
            .0
            .compare_exchange(RUNNING, ABANDONED_STATE, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.1.add();
        }
    }
}

/// Held by the thread; marks it ended when dropped.
struct EndMark(Arc<Life>);

impl Drop for EndMark {
    fn drop(&mut self) {
        if self.0.0.swap(ENDED, Ordering::SeqCst) == ABANDONED_STATE {
            self.0.1.sub();
        }
    }
}

impl Worker {
    /// Starts a thread that loads `wasm` as plugin `name` with `config`, and
    /// waits for it under the watchdog (compile, then configure).
    pub fn start(
        engine: &PluginEngine,
        name: &str,
        wasm: Vec<u8>,
        config: String,
        limits: PluginLimits,
    ) -> Result<Worker, PluginError> {
        let budget = Budget::daemon(Kind::Policy);
        if !budget.room() {
            return Err(PluginError::Stuck(limits.compile_timeout));
        }
        let (load_tx, load_rx) = mpsc::sync_channel::<Result<(String, Detected), PluginError>>(1);
        let (jobs, job_rx) = mpsc::channel::<(Arc<Pass>, Reply)>();
        let life = Arc::new(Life::new(budget));
        let mark = EndMark(Arc::clone(&life));
        let (engine, name_owned, l) = (engine.clone(), name.to_string(), limits.clone());
        std::thread::Builder::new()
            .name(format!("plugin-{name}"))
            .spawn(move || {
                let _mark = mark;
                let mut plugin = match PolicyPlugin::load(&engine, &name_owned, &wasm, &config, l) {
                    Ok(p) => {
                        let _ = load_tx.send(Ok((p.sha256.clone(), p.version.clone())));
                        p
                    }
                    Err(e) => {
                        let _ = load_tx.send(Err(e));
                        return;
                    }
                };
                drop(wasm);
                for (pass, reply) in job_rx {
                    let (c0, t0) = (thread_cpu(), Instant::now());
                    let result = plugin.evaluate(&pass);
                    let report = CallReport {
                        result,
                        cpu: thread_cpu().saturating_sub(c0),
                        wall: t0.elapsed(),
                        ended: false,
                    };
                    if reply.send(report).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| PluginError::Trap(format!("cannot start a plugin thread: {e}")))?;
        let watchdog = limits.compile_timeout + PluginLimits::watchdog(limits.configure_timeout);
        match load_rx.recv_timeout(watchdog) {
            Ok(Ok((sha256, version))) => Ok(Worker {
                runs: Runs::Thread { jobs, life },
                limits,
                sha256,
                version,
            }),
            Ok(Err(e)) => Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                life.abandon();
                Err(PluginError::Stuck(watchdog))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(PluginError::Trap(
                "the plugin thread ended while loading".into(),
            )),
        }
    }

    /// Loads `wasm` as plugin `name` with `config` on this thread; its calls
    /// run here too (see [`Runs::Here`]): for the simulator only.
    pub fn here(
        engine: &PluginEngine,
        name: &str,
        wasm: &[u8],
        config: &str,
        limits: PluginLimits,
    ) -> Result<Worker, PluginError> {
        let plugin = PolicyPlugin::load(engine, name, wasm, config, limits.clone())?;
        Ok(Worker {
            sha256: plugin.sha256.clone(),
            version: plugin.version.clone(),
            runs: Runs::Here(Box::new(std::sync::Mutex::new(Some(plugin)))),
            limits,
        })
    }

    /// Sends `pass` to be evaluated; the answer is waited for with
    /// [`Pending::wait`], so several workers can evaluate at once (and share
    /// what the pass derives from its snapshot). A worker on its caller's
    /// thread answers before this returns.
    pub fn submit(&self, pass: Arc<Pass>) -> Pending {
        match &self.runs {
            Runs::Thread { jobs, life } => {
                let (tx, rx) = mpsc::sync_channel(1);
                let _ = jobs.send((pass, tx));
                Pending(Waiting::Sent {
                    rx,
                    life: Arc::clone(life),
                    sent: Instant::now(),
                    watchdog: PluginLimits::watchdog(self.limits.evaluate_timeout),
                })
            }
            Runs::Here(plugin) => {
                // The call's wall time stands for its CPU time here: on this
                // one thread it is never less, and the thread's CPU clock
                // (not in the vDSO) would cost two system calls a call, a
                // few percent of a forecast's passes.
                let t0 = Instant::now();
                // Only this worker's owner calls it, one call at a time.
                let mut slot = plugin.lock().unwrap_or_else(|e| e.into_inner());
                // A panic in the host's side of a call ends this plugin, as
                // it ends a worker's thread: its calls fail from then on
                // (the chain counts them and disables it), and the caller
                // goes on.
                let result = match slot.as_mut() {
                    Some(p) => {
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.evaluate(&pass)))
                            .unwrap_or_else(|_| {
                                *slot = None;
                                Err(PluginError::Trap("the host panicked in its call".into()))
                            })
                    }
                    None => Err(PluginError::Trap(
                        "the host panicked in an earlier call".into(),
                    )),
                };
                let wall = t0.elapsed();
                Pending(Waiting::Answered(CallReport {
                    result,
                    cpu: wall,
                    wall,
                    ended: slot.is_none(),
                }))
            }
        }
    }

    /// Makes what `pass` must give this worker's plugin (its form, or its
    /// change from what the plugin holds) on the caller's thread, for a
    /// plugin on it: the plugins a pass then calls on two threads at once
    /// do not wait for each other to make the one they share. A worker on a
    /// thread of its own makes it there. A panic here is left to the call,
    /// which makes it again and ends the plugin as any panic in the host's
    /// side of it does (see [`Worker::submit`]): the caller goes on.
    pub fn prepare(&self, pass: &Pass) {
        if let Runs::Here(plugin) = &self.runs
            && let Some(p) = plugin.lock().unwrap_or_else(|e| e.into_inner()).as_ref()
        {
            let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.prepare(pass)));
            drop(made);
        }
    }

    /// Evaluates `snapshot` and waits for the answer.
    pub fn evaluate(&self, snapshot: Arc<Snapshot>) -> CallReport {
        self.submit(Arc::new(Pass::new(snapshot))).wait()
    }
}

impl Pending {
    /// The answer, or [`PluginError::Stuck`] once the watchdog's time has
    /// passed since the call was sent; then the worker must be dropped.
    pub fn wait(self) -> CallReport {
        let (rx, life, sent, watchdog) = match self.0 {
            Waiting::Answered(report) => return report,
            Waiting::Sent {
                rx,
                life,
                sent,
                watchdog,
            } => (rx, life, sent, watchdog),
        };
        let left = watchdog.saturating_sub(sent.elapsed());
        match rx.recv_timeout(left) {
            Ok(report) => report,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                life.abandon();
                CallReport {
                    result: Err(PluginError::Stuck(watchdog)),
                    cpu: Duration::ZERO,
                    wall: sent.elapsed(),
                    ended: true,
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => CallReport {
                result: Err(PluginError::Trap("the plugin thread ended".into())),
                cpu: Duration::ZERO,
                wall: sent.elapsed(),
                ended: true,
            },
        }
    }
}

/// Runs `call` on a thread of its own and waits for it at most `watchdog`:
/// a call that does not come back is abandoned (counted in
/// its `budget`, never joined), as a worker's is. For plugins
/// instantiated per call (result validators).
pub fn contained<R: Send + 'static>(
    budget: Budget,
    name: &str,
    watchdog: Duration,
    call: impl FnOnce() -> Result<R, PluginError> + Send + 'static,
) -> Result<R, PluginError> {
    if !budget.room() {
        return Err(PluginError::Stuck(watchdog));
    }
    let life = Arc::new(Life::new(budget));
    let mark = EndMark(Arc::clone(&life));
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(format!("plugin-{name}"))
        .spawn(move || {
            let _mark = mark;
            let _ = tx.send(call());
        })
        .map_err(|e| PluginError::Trap(format!("cannot start a plugin thread: {e}")))?;
    match rx.recv_timeout(watchdog) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            life.abandon();
            Err(PluginError::Stuck(watchdog))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(PluginError::Trap("the plugin thread ended".into()))
        }
    }
}

#[cfg(test)]
impl Worker {
    /// A worker whose thread has ended, as a panic in the host's side of
    /// a call leaves one (no plugin can be made to cause that panic).
    pub(crate) fn ended(limits: PluginLimits) -> Worker {
        let (jobs, _) = mpsc::channel();
        Worker {
            runs: Runs::Thread {
                jobs,
                life: Arc::new(Life::new(Budget::daemon(super::budget::Kind::Policy))),
            },
            limits,
            sha256: String::new(),
            version: Detected {
                api: super::version::ApiVersion::V0_2_3,
                exported: super::version::Exported::Delta,
                declared: None,
            },
        }
    }
}
