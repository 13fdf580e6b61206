//! The daemon's side of notifications: the delivery thread started with the
//! daemon, its started and stopped events, `notify ls` and `notify test`.

use std::sync::Arc;

use anyhow::{Result, anyhow};
use nightjar_core::api::notify::{DeadLetterView, NotifierView, NotifyReport, NotifyTestReply};

use crate::config::Config;
use crate::daemon::state::{Daemon, lock};
use crate::notify::worker::NotifyHost;
use crate::store::Store;
use crate::store::outbox::Severity;
use crate::time::now_ms;

impl NotifyHost for Daemon {
    fn config(&self) -> &Config {
        &self.cfg
    }

    fn outbox_store(&self) -> &std::sync::Mutex<Store> {
        self.store_mutex()
    }
}

impl Daemon {
    /// Registers the configured notifiers, writes `daemon-started`, and
    /// starts the delivery thread when there is a notifier.
    pub(in crate::daemon) fn start_notifications(self: &Arc<Self>) -> Result<()> {
        let names: Vec<String> = self.cfg.notifier.keys().cloned().collect();
        self.store().register_notifiers(&names)?;
        self.daemon_event("daemon-started", Severity::Info);
        if names.is_empty() {
            return Ok(());
        }
        let handle = crate::notify::worker::spawn(Arc::clone(self))?;
        *lock(&self.work.notify) = Some(handle);
        Ok(())
    }

    /// At a clean stop: waits, at most `[notify] stop_flush`, for the
    /// delivery thread to deliver what is pending (`daemon-stopped`
    /// included); what it could not goes out at the next start.
    pub(in crate::daemon) async fn flush_notifications(&self) {
        let within = self.cfg.notify.stop_flush;
        // Cloned out: holding the lock would hold up every `changed()`.
        let Some(handle) = lock(&self.work.notify).clone() else {
            return;
        };
        if within.is_zero() {
            return;
        }
        let flushed = tokio::task::spawn_blocking(move || handle.flush(within))
            .await
            .unwrap_or(false);
        if flushed {
            tracing::info!("pending notifications delivered");
        } else {
            tracing::warn!(
                "notifications still pending after notify.stop_flush ({}); they go out at the next start",
                crate::time::fmt_span(within.as_millis() as i64)
            );
        }
    }

    /// Writes a daemon event (`daemon-started`, `daemon-stopped`).
    pub fn daemon_event(&self, kind: &str, severity: Severity) {
        let words = match kind {
            "daemon-started" => "daemon started",
            "daemon-stopped" => "daemon stopped; running tasks keep running",
            other => other,
        };
        let facts = serde_json::json!({
            "message": words,
            "pid": std::process::id(),
            "version": env!("CARGO_PKG_VERSION"),
        });
        if let Err(e) = self.store().daemon_event(now_ms(), kind, severity, facts) {
            tracing::warn!("cannot write the {kind} event: {e}");
        }
        self.changed();
    }

    /// `notify ls`.
    pub fn notify_report(&self) -> Result<NotifyReport> {
        let store = self.store();
        let mut notifiers = Vec::new();
        for (name, entry) in &self.cfg.notifier {
            let s = store.notifier(name)?;
            let state = match (&s.last_error, s.attempts) {
                (Some(_), a) if a > 0 => "retrying",
                _ => "ok",
            };
            notifiers.push(NotifierView {
                name: name.clone(),
                plugin: entry.plugin.clone(),
                state: state.into(),
                pending: store.pending_count(s.cursor)?,
                attempts: s.attempts,
                next_at: s.next_at,
                last_error: s.last_error,
                delivered: s.delivered,
            });
        }
        let dead = store
            .dead_letters(100)?
            .into_iter()
            .map(|d| {
                let e = store.outbox_event(d.event_id).ok().flatten();
                DeadLetterView {
                    id: d.id,
                    notifier: d.notifier,
                    event_id: d.event_id,
                    kind: e.as_ref().map(|e| e.kind.clone()).unwrap_or_default(),
                    task: e.and_then(|e| e.task),
                    at: d.at,
                    reason: d.reason,
                    state: d.state,
                }
            })
            .collect();
        Ok(NotifyReport { notifiers, dead })
    }

    /// `notify retry ID`: dead letter `id` queued again, when its notifier
    /// is still configured (no one would ever deliver it otherwise).
    pub fn notify_retry(&self, id: i64) -> Result<usize> {
        let mut store = self.store();
        if let Some(name) = store.dead_letter_notifier(id)?
            && !self.cfg.notifier.contains_key(&name)
        {
            return Err(anyhow!(
                "dead letter {id} belongs to notifier `{name}`, which the config no longer has; \
                 add its [notifier.{name}] table back (and restart the daemon) to deliver it"
            ));
        }
        Ok(store.set_dead_letter(id, "requeued", None)?)
    }

    /// `notify test NAME` (blocking: call it off the runtime's thread).
    pub fn notify_test(&self, name: &str) -> Result<NotifyTestReply> {
        let entry = self.cfg.notifier.get(name).ok_or_else(|| {
            anyhow!(
                "no notifier named `{name}`; the config has {}",
                if self.cfg.notifier.is_empty() {
                    "none ([notifier.NAME] tables)".to_string()
                } else {
                    self.cfg
                        .notifier
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )
        })?;
        let n = crate::notify::deliver::Configured::load(&self.cfg, name, entry);
        if let Some(e) = n.broken() {
            return Ok(NotifyTestReply {
                delivered: false,
                answer: Vec::new(),
                error: Some(e.to_string()),
            });
        }
        Ok(crate::notify::deliver::test(
            &self.cfg,
            self.store_mutex(),
            &n,
        ))
    }
}
