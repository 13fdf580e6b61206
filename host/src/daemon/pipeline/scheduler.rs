//! The scheduler thread: it owns the policy chain, loads and reloads it, and
//! runs every scheduling pass, so neither a plugin nor a compile ever runs on
//! the async runtime that answers the API, records runs and handles signals.
//! The host owns the cadence: passes run when something changed (a kick),
//! when the store has something due, and when a policy asked to be asked
//! again, but never sooner than `plugins.min_pass_interval` for the latter.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::daemon::pipeline::chain::Chain;
use crate::daemon::pipeline::chain_reload::{Pending, Started};
use crate::daemon::state::{Daemon, lock};
use nightjar_core::api::ReloadChange;
use tokio::sync::oneshot;

/// How often the plugin folder is looked at for changed files.
const FOLDER_SCAN: Duration = Duration::from_secs(2);

/// How soon a daemon below `[retention] min_free` looks at the disk again.
const GATE_RECHECK: Duration = Duration::from_secs(5);

/// Wakes the scheduler thread.
#[derive(Default)]
pub struct Kick {
    flag: Mutex<bool>,
    cv: Condvar,
}

impl Kick {
    /// Asks for a pass as soon as the thread is free.
    pub fn notify(&self) {
        *crate::daemon::locks::leaf(&self.flag) = true;
        self.cv.notify_one();
    }

    /// Sleeps until kicked or `timeout` has passed.
    fn wait(&self, timeout: Duration) {
        let mut kicked = crate::daemon::locks::leaf(&self.flag);
        if !*kicked {
            kicked = self
                .cv
                .wait_timeout(kicked, timeout)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        *kicked = false;
    }
}

/// What the rest of the daemon asks of the scheduler thread.
pub enum Command {
    /// Reload the chain's plugin files; the changes go to the sender, if any.
    Reload(Option<tokio::sync::oneshot::Sender<Vec<ReloadChange>>>),
}

/// Runs the scheduler with the loaded `chain` until the daemon drains.
/// `handle` lets runs started here be watched on the async runtime.
pub fn run(
    d: Arc<Daemon>,
    handle: tokio::runtime::Handle,
    mut chain: Option<Chain>,
    commands: mpsc::Receiver<Command>,
) {
    let _runtime = handle.enter();
    let mut seen = Chain::fingerprint(&d.cfg);
    let mut last_scan = Instant::now();
    // The chain's last evaluation, filling slots until the next one.
    let mut ranking = None;
    // A reload compiling off this thread, and whether files changed (or a
    // reload was asked) since it began.
    let mut pending: Option<Pending> = None;
    let mut again: Vec<oneshot::Sender<Vec<ReloadChange>>> = Vec::new();
    let mut asked = false;
    loop {
        if d.draining.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        while let Ok(Command::Reload(reply)) = commands.try_recv() {
            asked = true;
            again.extend(reply);
        }
        if chain.is_some() && last_scan.elapsed() >= FOLDER_SCAN {
            last_scan = Instant::now();
            let now = Chain::fingerprint(&d.cfg);
            if now != seen {
                seen = now;
                asked = true;
            }
        }
        if let Some(p) = pending.take() {
            match p.finished() {
                Ok((started, replies)) => {
                    let changes = apply(&d, chain.as_mut(), started);
                    for r in replies {
                        let _ = r.send(changes.clone());
                    }
                }
                Err(p) => pending = Some(p),
            }
        }
        if asked && pending.is_none() {
            asked = false;
            let replies = std::mem::take(&mut again);
            match chain.as_ref() {
                Some(c) => {
                    let wake = Arc::clone(&d);
                    match Pending::start(c, &d.cfg, replies, move || wake.kick.notify()) {
                        Ok(p) => pending = Some(p),
                        // Nothing changed: nothing to wait for.
                        Err(replies) => {
                            for r in replies {
                                let _ = r.send(Vec::new());
                            }
                        }
                    }
                }
                None => {
                    for r in replies {
                        let _ = r.send(Vec::new());
                    }
                }
            }
        }
        // The wake-up below counts backoffs ending after the pass began:
        // one that ends while the pass runs (starting other tasks takes a
        // while) was not eligible to it, and nothing else would wake it.
        let began = d.now_ms();
        let timer = std::time::Instant::now();
        let passed = d.pass(chain.as_mut(), &mut ranking);
        d.metrics.pass_took(timer.elapsed());
        match passed {
            Ok(()) => {
                d.pipeline.pass_failures.cleared();
            }
            Err(e) => {
                d.pipeline
                    .pass_failures
                    .failed("this turn", &format!("{e:#}"));
            }
        }
        let store_wake = d.store().next_wakeup(began).ok().flatten();
        let wake = match (store_wake, d.policy_wakeup()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // A pass when a stagger ends: the task waiting for it starts then.
        let stagger = lock(&d.pool).stagger.next_expiry();
        let wake = match (wake, stagger) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let now = d.now_ms();
        let mut sleep = match wake {
            Some(at) => Duration::from_millis(at.saturating_sub(now).clamp(0, 3_600_000) as u64),
            None => Duration::from_secs(3600),
        };
        if chain.is_some() {
            sleep = sleep.min(FOLDER_SCAN);
        }
        if lock(&d.watch.gpu).is_some() {
            // GPU memory freed by others kicks nothing: a task waiting for
            // free memory (after a gpu-oom) is looked at with each reading.
            sleep = sleep.min(d.cfg.gpu.sample_period.max(Duration::from_millis(100)));
        }
        if lock(&d.pipeline.start_gate).is_some() {
            // Below `[retention] min_free`: look at the disk again soon.
            sleep = sleep.min(GATE_RECHECK);
        }
        d.kick.wait(sleep);
    }
}

/// Puts a finished reload in place, publishes the chain's members and
/// says what changed.
fn apply(d: &Daemon, chain: Option<&mut Chain>, started: Vec<Started>) -> Vec<ReloadChange> {
    let Some(chain) = chain else {
        return Vec::new();
    };
    let changes = chain.apply(started);
    lock(&d.pipeline.chain_status).views = chain.views();
    for c in &changes {
        tracing::info!("{c}");
    }
    if !changes.is_empty() {
        d.changes.send_modify(|n| *n += 1);
        d.kick.notify();
    }
    changes
}

impl Daemon {
    /// Asks the scheduler thread to reload the plugins (SIGHUP, `plugins
    /// reload`); the changes come back on `reply`.
    pub fn request_reload(&self, reply: Option<tokio::sync::oneshot::Sender<Vec<ReloadChange>>>) {
        let _ = lock(&self.pipeline.commands).send(Command::Reload(reply));
        self.kick.notify();
    }

    /// Reloads the plugins and waits (asynchronously) for what changed.
    pub async fn reload_plugins(&self) -> anyhow::Result<Vec<ReloadChange>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.request_reload(Some(tx));
        match tokio::time::timeout(Duration::from_secs(300), rx).await {
            Ok(Ok(changes)) => Ok(changes),
            Ok(Err(_)) => anyhow::bail!("the daemon is stopping"),
            Err(_) => anyhow::bail!(
                "the reload is still running after 5 minutes; `nightjar plugins` shows when it is done"
            ),
        }
    }

    /// The chain's members, for `nightjar plugins ls`.
    pub fn plugin_views(&self) -> Vec<crate::daemon::MemberView> {
        lock(&self.pipeline.chain_status).views.clone()
    }

    /// When the chain asked to be asked again.
    pub fn policy_wakeup(&self) -> Option<i64> {
        *lock(&self.pipeline.policy_wake)
    }
}
