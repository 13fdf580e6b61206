//! Reloads that compile off the scheduler thread. A changed plugin file is
//! compiled and configured on a thread of its own while passes go on with
//! the chain as it was (a 30 MB component compiles for seconds: starts
//! must not wait for it); the scheduler thread puts the result in place at
//! its next turn, and answers whoever asked (`nightjar plugins reload`).

use std::sync::mpsc;

use nightjar_core::api::ReloadChange;
use tokio::sync::oneshot;

use crate::config::Config;
use crate::daemon::boot::startup::StartError;
use crate::daemon::pipeline::chain::{Chain, Loaded, start_member};
use crate::plugins::worker::Worker;

/// A member whose file changed: what a reload starts it from.
pub(in crate::daemon) struct Changed {
    /// Its place in the chain.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// `built-in` or its file.
    pub source: String,
    /// The component, or why it cannot be read.
    pub wasm: Result<Vec<u8>, String>,
}

/// What starting a changed member gave.
pub(in crate::daemon) struct Started {
    /// Its place in the chain.
    pub index: usize,
    /// Its name (checked again when applied).
    pub name: String,
    /// Where it came from.
    pub source: String,
    /// The running worker, or why it was rejected.
    pub result: Result<(Worker, Loaded), StartError>,
}

/// Whoever waits for a reload's changes (`nightjar plugins reload`).
pub(in crate::daemon) type Replies = Vec<oneshot::Sender<Vec<ReloadChange>>>;

/// A reload compiling in the background, and who waits for its changes.
pub(in crate::daemon) struct Pending {
    done: mpsc::Receiver<Vec<Started>>,
    replies: Replies,
}

impl Pending {
    /// Starts compiling what changed in `chain` under `cfg`; `wake` is
    /// called when it is done. `None` when nothing changed.
    pub fn start(
        chain: &Chain,
        cfg: &Config,
        replies: Replies,
        wake: impl Fn() + Send + 'static,
    ) -> Result<Pending, Replies> {
        let changed = chain.changed(cfg);
        if changed.is_empty() {
            return Err(replies);
        }
        let (engine, limits) = chain.starter();
        let cfg = cfg.clone();
        let (tx, done) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("plugin-reload".into())
            .spawn(move || {
                let started = changed
                    .into_iter()
                    .map(|c| Started {
                        result: start_member(
                            engine.as_ref(),
                            &limits,
                            &cfg,
                            &c.name,
                            c.wasm,
                            false,
                        ),
                        index: c.index,
                        name: c.name,
                        source: c.source,
                    })
                    .collect();
                let _ = tx.send(started);
                wake();
            });
        match spawned {
            Ok(_) => Ok(Pending { done, replies }),
            Err(e) => {
                tracing::error!("cannot start a thread to reload plugins: {e}");
                Err(replies)
            }
        }
    }

    /// What it started, once done (`Err(self)` while it compiles).
    pub fn finished(self) -> Result<(Vec<Started>, Replies), Pending> {
        match self.done.try_recv() {
            Ok(started) => Ok((started, self.replies)),
            Err(mpsc::TryRecvError::Empty) => Err(self),
            // The thread died without an answer (a panic): nothing changed.
            Err(mpsc::TryRecvError::Disconnected) => Ok((Vec::new(), self.replies)),
        }
    }
}
