//! `webhook`: posts each event as JSON to one URL, signed the way
//! [Standard Webhooks](https://www.standardwebhooks.com/) receivers check.
//!
//! ```toml
//! [notifier.ops-hook]
//! plugin = "webhook"                      # the host's keys (plugin, events, allow, ...)
//! allow = ["hooks.example.org"]           # are the host's; the rest is this plugin's:
//! url = "https://hooks.example.org/nightjar"   # required; https (http only to loopback)
//! headers = { "X-Team" = "vision" }       # optional extra headers
//! secrets = { signing = "env:NIGHTJAR_HOOK_SECRET", authorization = "file:/etc/nightjar/hook-token" }
//! ```
//!
//! The host resolves `secrets` before the plugin sees them, so the plugin
//! gets `secrets.signing` (optional: the shared signing secret; a value
//! `whsec_<base64>` is base64-decoded as Standard Webhooks libraries do,
//! any other is used as its UTF-8 bytes) and `secrets.authorization`
//! (optional: the whole `Authorization` header value, such as
//! `Bearer abc...`).
//!
//! # The request
//!
//! One `POST` per event, in order, with `content-type: application/json`
//! and the body of schema `nightjar.event.v1`
//! (`plugins/webhook/schema/nightjar.event.v1.json`, JSON Schema draft
//! 2020-12):
//!
//! ```json
//! {"schema": "nightjar.event.v1", "id": 42, "key": "42-ops-hook",
//!  "kind": "task-failed", "at": 1700000000000, "severity": "error",
//!  "task": 7, "run": 9, "project": "vision",
//!  "title": "Task 7 (train-vit) failed: out of GPU memory",
//!  "text": "…", "fields": {"class": "oom", "exit-code": "1"}}
//! ```
//!
//! `at` is Unix milliseconds; `task`, `run` and `project` are `null` when
//! the event has none; `fields` maps each fact's name to its value (the
//! first, should a name repeat). Within v1 fields may be added, never
//! removed or changed; receivers ignore what they do not know.
//!
//! Headers: `webhook-id` and `Idempotency-Key` are the event's delivery key
//! (the same on every retry: drop repeats by it); `webhook-timestamp` is the
//! event's `at` in Unix seconds — when it happened, not when it was sent,
//! since plugins have no clock, so a receiver that rejects old timestamps
//! must allow for the host's retries (up to hours); with a signing secret,
//! `webhook-signature: v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`.
//! The `headers` table may not set these, `content-type`, `authorization`
//! (use the secret), or what the transport owns (`host`, `content-length`,
//! `transfer-encoding`, `connection`).
//!
//! # Outcomes
//!
//! 2xx is delivered. 408, 429, 5xx, a timeout or an unreachable server is
//! transient (the host retries later); any other status, and a request the
//! host refuses (not allow-listed), is permanent. Errors name the status
//! and quote the first 200 bytes of the body. When several events come in
//! one call (a rate-limited notifier), they are posted one by one and the
//! first failure ends the call: delivery is all or nothing, so the host
//! sends the earlier ones again with the rest, under the same keys.

use nightjar_sdk::{DeliveryError, Event, Notifier, export_notifier, http};

mod config;
mod payload;
mod sign;

pub use config::{Config, Secrets};
pub use payload::{SCHEMA, body};
pub use sign::signature;

/// The `webhook` notifier.
pub struct Webhook;

impl Notifier for Webhook {
    type Config = Config;

    fn deliver(config: &Config, events: &[Event]) -> Result<(), DeliveryError> {
        for event in events {
            post(config, event).map_err(|e| {
                e.map_message(|m| format!("{}: event {}: {m}", config.url_host(), event.id))
            })?;
        }
        Ok(())
    }

    fn check_config(config: &Config) -> Result<(), nightjar_sdk::ConfigError> {
        config.check()
    }
}

export_notifier!(Webhook);

/// POSTs one event.
fn post(config: &Config, event: &Event) -> Result<(), DeliveryError> {
    let body = body(event);
    let response = http::post_json(&config.url, headers(config, event, &body)?, body)?;
    response.check()
}

/// The request's headers for `event` with `body`, in the order sent.
pub fn headers(
    config: &Config,
    event: &Event,
    body: &[u8],
) -> Result<Vec<(String, String)>, DeliveryError> {
    let timestamp = event.at_seconds().to_string();
    let mut h = vec![
        ("webhook-id".to_string(), event.key.clone()),
        ("webhook-timestamp".to_string(), timestamp.clone()),
    ];
    if let Some(key) = config.signing_key()? {
        h.push((
            "webhook-signature".to_string(),
            signature(&key, &event.key, &timestamp, body)?,
        ));
    }
    h.push(("Idempotency-Key".to_string(), event.key.clone()));
    if let Some(auth) = &config.secrets.authorization {
        h.push(("authorization".to_string(), auth.clone()));
    }
    h.extend(config.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(h)
}

#[cfg(test)]
mod tests;
