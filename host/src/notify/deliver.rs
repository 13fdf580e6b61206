//! The delivery thread: each notifier walks the outbox from its cursor, in
//! order, handing its subscribed events to its plugin (one per call, or all
//! that waited as one summary when it is rate-limited). An acknowledged
//! event moves the cursor in the store, so it is never sent again; a crash
//! mid-send repeats that one delivery with the same key. A transient
//! failure waits on `[notify] retry` (with jitter; the time is stored, so it
//! survives restarts); after the last wait, or at once for a permanent
//! failure, the events become dead letters.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nightjar_core::api::notify::NotifyTestReply;

use super::event;
use crate::config::{Config, NotifierEntry};
use crate::plugins::notifier::http::HttpBroker;
use crate::plugins::notifier::mail::{MailBroker, MailSettings};
use crate::plugins::notifier::{DeliveryFailure, NotifierPlugin, Outlets};
use crate::store::{OutboxEvent, Store};
use crate::sync::LockUnpoisoned;
use crate::time::now_ms;

/// Events read from the outbox at a time for a rate-limited notifier (what
/// waited goes out as one summary)...
const PAGE: usize = 500;

/// ...and for one that sends an event per call: reading 500 rows (and
/// parsing their facts) for each delivery would be most of its work.
const SINGLE_PAGE: usize = 32;

/// Events one summary carries at most.
const MAX_BATCH: usize = 200;

/// Messages one delivery may try beyond one per event it carries (a
/// summary goes to each recipient list once).
const MAIL_SLACK: usize = 10;

/// One configured notifier, ready to deliver.
pub struct Configured {
    /// Its name.
    pub name: String,
    /// Its table.
    pub entry: NotifierEntry,
    plugin: Result<Arc<NotifierPlugin>, String>,
    /// The plugin's config as TOML, secrets resolved (never logged).
    config: String,
    /// The resolved secrets, to cut out of every text.
    pub secrets: Vec<String>,
    /// The host's SMTP settings (`None`: no `[mail]`).
    mail: Option<Arc<Result<MailSettings, String>>>,
    sent: VecDeque<Instant>,
}

impl Configured {
    /// Loads `name`'s plugin and resolves its secrets; a failure is kept
    /// and shown (`notify ls`), and every delivery waits on the schedule.
    pub fn load(cfg: &Config, name: &str, entry: &NotifierEntry) -> Configured {
        let secrets = crate::secrets::resolve_all(name, &entry.secrets);
        let (config, values) = match &secrets {
            Ok(values) => {
                let mut t = entry.config.clone();
                let table: toml::Table = values
                    .iter()
                    .map(|(k, v)| (k.clone(), toml::Value::String(v.clone())))
                    .collect();
                t.insert("secrets".into(), toml::Value::Table(table));
                (
                    toml::to_string(&t).unwrap_or_default(),
                    values.values().cloned().collect(),
                )
            }
            Err(_) => (String::new(), Vec::new()),
        };
        let plugin = secrets
            .and_then(|_| super::plugins::load(cfg, name, &entry.plugin))
            .map_err(|e| crate::secrets::redact(&e, &Vec::new()));
        Configured {
            name: name.to_string(),
            entry: entry.clone(),
            plugin,
            config,
            secrets: values,
            mail: cfg
                .mail
                .as_ref()
                .map(|m| Arc::new(MailSettings::resolve(m))),
            sent: VecDeque::new(),
        }
    }

    /// Why it cannot deliver at all, if it cannot.
    pub fn broken(&self) -> Option<&str> {
        self.plugin.as_ref().err().map(String::as_str)
    }

    /// Whether `e` is for this notifier: a kind it lists, or (listing
    /// none) anything of its least severity, and the digest, which is a
    /// report asked for by `[notify] digest`, not an alert to filter.
    fn subscribed(&self, e: &OutboxEvent) -> bool {
        let n = &self.entry;
        let any_kind = n.events.is_empty() && (e.severity >= n.min_severity || e.kind == "digest");
        (any_kind || n.events.contains(&e.kind))
            && (n.projects.is_empty() || e.project.as_ref().is_none_or(|p| n.projects.contains(p)))
    }

    /// The wait before another delivery may go under its rate, if any.
    fn rate_wait(&mut self) -> Option<Duration> {
        let per_minute = self.entry.rate_per_minute? as usize;
        let minute = Duration::from_secs(60);
        while self.sent.front().is_some_and(|t| t.elapsed() >= minute) {
            self.sent.pop_front();
        }
        (self.sent.len() >= per_minute).then(|| {
            self.sent
                .front()
                .map_or(minute, |t| minute.saturating_sub(t.elapsed()))
        })
    }

    /// Hands `events` to the plugin.
    pub fn deliver(
        &self,
        cfg: &Config,
        store: &Mutex<Store>,
        events: &[OutboxEvent],
        journal: Option<Arc<Mutex<Vec<String>>>>,
    ) -> Result<(), DeliveryFailure> {
        let plugin = self
            .plugin
            .as_ref()
            .map_err(|e| DeliveryFailure::Transient(e.clone()))?;
        let wire = events
            .iter()
            .map(|e| event::wire(cfg, store, e, &self.name, &self.secrets))
            .collect();
        let until = Instant::now() + cfg.notify.timeout;
        let mut http = HttpBroker::new(
            self.entry.allow.clone(),
            cfg.notify.http_timeout,
            self.secrets.clone(),
        )
        .until(until);
        let mut mail = MailBroker::new(self.mail.clone(), &self.entry.allow, self.secrets.clone())
            .until(until)
            .at_most(events.len() + MAIL_SLACK);
        if let Some(j) = journal {
            http = http.with_journal(Arc::clone(&j));
            mail = mail.with_journal(j);
        }
        plugin.deliver(
            &self.config,
            wire,
            Outlets { http, mail },
            cfg.notify.timeout,
        )
    }
}

/// Every notifier of the config.
pub fn load_all(cfg: &Config) -> Vec<Configured> {
    cfg.notifier
        .iter()
        .map(|(name, entry)| Configured::load(cfg, name, entry))
        .collect()
}

/// The wait before retry `attempt` (1 = the first), with ±20 % jitter from
/// `seed`; `None` once the schedule is spent.
fn backoff(schedule: &[Duration], attempt: u32, seed: u64) -> Option<Duration> {
    let base = *schedule.get(attempt.checked_sub(1)? as usize)?;
    let mix = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33;
    let permille = 800 + (mix % 401); // 0.8 .. 1.2
    Some(base.mul_f64(permille as f64 / 1000.0))
}

/// One step of one notifier: delivers what is due. Returns when it wants to
/// be asked again (`None`: when something new happens).
pub fn step(cfg: &Config, store: &Mutex<Store>, n: &mut Configured) -> Option<i64> {
    let lock = || store.lock_unpoisoned();
    let now = now_ms();
    let state = lock().notifier(&n.name).ok()?;
    if let Some(at) = state.next_at.filter(|at| *at > now) {
        return Some(at);
    }
    if let Some(wait) = n.rate_wait() {
        return Some(now + wait.as_millis() as i64);
    }
    // A dead letter queued again by `notify retry` goes first, alone.
    // (Bound first: the guard of an `if let` scrutinee lives through its block.)
    let requeued = lock().requeued(&n.name);
    if let Ok(Some((dead, event_id))) = requeued {
        let found = lock().outbox_event(event_id).ok().flatten();
        let result = match &found {
            Some(e) => n.deliver(cfg, store, std::slice::from_ref(e), None),
            None => Err(DeliveryFailure::Permanent("the event was collected".into())),
        };
        let (state, reason) = match result {
            Ok(()) => ("delivered", None),
            Err(DeliveryFailure::Transient(m) | DeliveryFailure::Permanent(m)) => {
                ("dead", Some(crate::secrets::redact(&m, &n.secrets)))
            }
        };
        let _ = lock().set_dead_letter(dead, state, reason.as_deref());
        n.sent.push_back(Instant::now());
        return Some(now);
    }
    let (page_size, max) = match n.entry.rate_per_minute {
        Some(_) => (PAGE, MAX_BATCH),
        None => (SINGLE_PAGE, 1),
    };
    let page = lock().events_after(state.cursor, page_size).ok()?;
    let last = page.last()?.id;
    let batch: Vec<OutboxEvent> = page
        .into_iter()
        .filter(|e| n.subscribed(e))
        .take(max)
        .collect();
    let Some(upto) = batch.last().map(|e| e.id) else {
        // Nothing here is for it: move past the page.
        let _ = lock().advance(&n.name, last, 0);
        return Some(now);
    };
    let result = n.deliver(cfg, store, &batch, None);
    n.sent.push_back(Instant::now());
    let ids: Vec<i64> = batch.iter().map(|e| e.id).collect();
    let mut s = lock();
    let _ = match result {
        Ok(()) => s.advance(&n.name, upto, batch.len()),
        Err(DeliveryFailure::Permanent(m)) => {
            s.bury(&n.name, &ids, now, &crate::secrets::redact(&m, &n.secrets))
        }
        Err(DeliveryFailure::Transient(m)) => {
            let m = crate::secrets::redact(&m, &n.secrets);
            let attempt = state.attempts + 1;
            match backoff(&cfg.notify.retry, attempt, (upto as u64) ^ now as u64) {
                Some(wait) => s.delivery_failed(&n.name, now + wait.as_millis() as i64, &m),
                None => s.bury(
                    &n.name,
                    &ids,
                    now,
                    &format!("gave up after {} tries: {m}", attempt),
                ),
            }
        }
    };
    Some(now)
}

/// `notify test NAME`: a test event through one notifier, now.
pub fn test(cfg: &Config, store: &Mutex<Store>, n: &Configured) -> NotifyTestReply {
    let journal = Arc::new(Mutex::new(Vec::new()));
    let e = OutboxEvent {
        id: 0,
        at: now_ms(),
        kind: "test".into(),
        severity: crate::store::outbox::Severity::Info,
        task: None,
        run: None,
        project: None,
        facts: serde_json::json!({ "message": "test message from nightjar (notify test)" })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    };
    let r = n.deliver(cfg, store, &[e], Some(Arc::clone(&journal)));
    let answer = journal.lock_unpoisoned().clone();
    let error = r.err().map(|e| match e {
        DeliveryFailure::Transient(m) => format!("transient: {m}"),
        DeliveryFailure::Permanent(m) => format!("permanent: {m}"),
    });
    NotifyTestReply {
        delivered: error.is_none(),
        answer,
        error: error.map(|e| crate::secrets::redact(&e, &n.secrets)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_follows_the_schedule_with_bounded_jitter_then_ends() {
        let s = [Duration::from_secs(5), Duration::from_secs(300)];
        for seed in 0..50u64 {
            let d = backoff(&s, 1, seed).unwrap();
            assert!((4_000..=6_000).contains(&d.as_millis()), "{d:?}");
            let d = backoff(&s, 2, seed).unwrap();
            assert!((240_000..=360_000).contains(&d.as_millis()), "{d:?}");
        }
        assert_eq!(backoff(&s, 3, 1), None, "spent: dead letters");
        assert_eq!(backoff(&s, 0, 1), None);
    }
}
