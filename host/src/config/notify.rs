//! `[notify]`: how events are told (language, retry schedule, HTTP limits);
//! `[notifier.NAME]`: each notifier, its subscription, its allow-list and
//! its secrets (references to the environment or a file, never the value).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, bail};
use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;
use nightjar_core::api::findings::Severity;

/// The language messages are written in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// English.
    #[default]
    En,
    /// Chinese (simplified).
    Zh,
}

/// `[notify]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotifyConfig {
    /// `en` or `zh`.
    pub language: Language,
    /// Waits before each retry of a failed delivery; after the last one the
    /// events become dead letters.
    #[serde(with = "humantime_serde_compat::list")]
    pub retry: Vec<Duration>,
    /// Deadline of one HTTP request of a notifier.
    #[serde(with = "humantime_serde_compat")]
    pub http_timeout: Duration,
    /// Deadline of one `deliver` call (its HTTP requests included).
    #[serde(with = "humantime_serde_compat")]
    pub timeout: Duration,
    /// When the digest is written (`daily@08:00`, `weekly@mon08:00`, or
    /// cron), in `timezone`; none: no digest.
    pub digest: Option<String>,
    /// A watched file system (the state dir's, running tasks' output
    /// folders') with less free than this is told of once (`disk-low`);
    /// 0 turns the check off.
    pub disk_low: ByteSize,
    /// At a clean stop, how long the daemon waits for what is pending
    /// (`daemon-stopped` included) to be delivered; what is left is
    /// delivered at the next start.
    #[serde(with = "humantime_serde_compat")]
    pub stop_flush: Duration,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        let s = Duration::from_secs;
        NotifyConfig {
            language: Language::En,
            retry: vec![s(5), s(300), s(1800), s(7200), s(18_000), s(36_000)],
            http_timeout: s(10),
            timeout: s(30),
            digest: None,
            disk_low: ByteSize::gib(5),
            stop_flush: s(5),
        }
    }
}

/// `[notifier.NAME]` (no unknown-key check here: every key the host does
/// not own is the plugin's, which checks its own).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NotifierEntry {
    /// `webhook`, `wecom` (built in) or the path of a `.wasm` notifier.
    pub plugin: String,
    /// Event kinds sent (empty: every kind of at least `min_severity`).
    #[serde(default)]
    pub events: Vec<String>,
    /// Projects whose task events are sent (empty: all).
    #[serde(default)]
    pub projects: Vec<String>,
    /// The least severity sent.
    #[serde(default = "warning")]
    pub min_severity: Severity,
    /// Hosts (`name` or `name:port`) its HTTP may reach, and the mail
    /// recipients it may write to (`alice@lab.edu`, or `@lab.edu`).
    #[serde(default)]
    pub allow: Vec<String>,
    /// At most this many deliveries a minute; events that wait are handed
    /// over together, as one summary.
    #[serde(default)]
    pub rate_per_minute: Option<u32>,
    /// Secrets handed to the plugin as `secrets.KEY`: `env:NAME` or
    /// `file:/path` (a file only its owner may read).
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// Everything else: the plugin's own config.
    #[serde(flatten)]
    pub config: toml::Table,
}

fn warning() -> Severity {
    Severity::Warning
}

/// The event kinds the host writes.
pub const KINDS: &[&str] = &[
    "task-started",
    "task-succeeded",
    "task-failed",
    "task-validation-failed",
    "task-retried",
    "task-preempted",
    "task-held",
    "task-blocked",
    "task-cancelled",
    "task-stalled",
    "plugin-disabled",
    "disk-low",
    "archive-failed",
    "daemon-started",
    "daemon-stopped",
    "digest",
];

impl NotifyConfig {
    /// Checks the values.
    pub fn validate(&self, notifiers: &BTreeMap<String, NotifierEntry>) -> Result<()> {
        if self.retry.is_empty() || self.retry.len() > 20 {
            bail!(
                "key `notify.retry`: between 1 and 20 waits (the last failure after them is dead)"
            );
        }
        if self.http_timeout.is_zero() || self.timeout < self.http_timeout {
            bail!("keys `notify.http_timeout` and `notify.timeout`: 0 < http_timeout <= timeout");
        }
        if let Some(d) = &self.digest {
            let s = crate::task::schedule::parse(d)
                .map_err(|e| anyhow::anyhow!("key `notify.digest`: {e}"))?;
            if s.is_reboot() {
                bail!(
                    "key `notify.digest`: `@reboot` would send the digest only when the daemon starts; write e.g. `@daily`, `daily@08:00` or `0 8 * * 1`"
                );
            }
            // In UTC: a date that never comes (30 February) never comes in
            // any zone, and one that does comes within a few years in all.
            if s.next_after(chrono::Utc::now(), chrono_tz::UTC).is_none() {
                bail!(
                    "key `notify.digest`: `{d}` never fires (no such date, as 30 February); write e.g. `daily@08:00` or `0 8 * * 1`"
                );
            }
        }
        if self.stop_flush > Duration::from_secs(600) {
            bail!(
                "key `notify.stop_flush`: at most 10m (a stop waits this long for deliveries; what is left goes out at the next start)"
            );
        }
        for (name, n) in notifiers {
            if let Some(k) = n.events.iter().find(|k| !KINDS.contains(&k.as_str())) {
                bail!(
                    "table `[notifier.{name}]`, key `events`: `{k}` is not an event kind; one of {}",
                    KINDS.join(", ")
                );
            }
            if n.rate_per_minute == Some(0) {
                bail!("table `[notifier.{name}]`, key `rate_per_minute`: at least 1");
            }
            for a in &n.allow {
                // `@` makes it a mail recipient rule; else an HTTP host.
                let r = if a.contains('@') {
                    crate::plugins::notifier::mail::parse_recipient(a).map(drop)
                } else {
                    crate::plugins::notifier::allow::parse(a).map(drop)
                };
                r.map_err(|e| anyhow::anyhow!("table `[notifier.{name}]`, key `allow`: {e}"))?;
            }
            for (k, v) in &n.secrets {
                if !(v.starts_with("env:") || v.starts_with("file:")) {
                    bail!(
                        "table `[notifier.{name}]`, key `secrets.{k}`: write `env:NAME` or `file:/path`, never the secret itself"
                    );
                }
            }
        }
        Ok(())
    }
}
