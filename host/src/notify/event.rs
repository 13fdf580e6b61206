//! An outbox event as a notifier receives it: rendered in the configured
//! language, its facts as fields, the end of its run's stderr, secrets cut.

use std::sync::Mutex;

use serde_json::Value;

use crate::config::Config;
use crate::plugins::notifier::{Event, Field, Severity};
use crate::store::{OutboxEvent, Store};
use crate::sync::LockUnpoisoned;

/// `e` for notifier `name`, whose secrets are `secrets`.
pub fn wire(
    cfg: &Config,
    store: &Mutex<Store>,
    e: &OutboxEvent,
    name: &str,
    secrets: &[String],
) -> Event {
    let redact = |t: &str| crate::secrets::redact(t, secrets);
    // The end of the run's stderr, for a run that failed.
    let stderr = e
        .run
        .filter(|_| e.severity >= crate::store::outbox::Severity::Warning)
        .and_then(|run| {
            let dir = store.lock_unpoisoned().run(run).ok()?.run_dir;
            let path = std::path::Path::new(&dir).join(crate::sandbox::files::STDERR);
            let tail = crate::sandbox::classify::tail_bytes(&path, 4096);
            Some(redact(&super::render::last_lines(&tail)))
        });
    let (title, text) = if e.kind == "digest" {
        super::digest::render(
            &e.facts,
            cfg.notify.language,
            crate::sys::host_name(),
            cfg.tz(),
        )
    } else {
        super::render::render(
            e,
            cfg.notify.language,
            crate::sys::host_name(),
            stderr.as_deref(),
        )
    };
    let fields = e
        .facts
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| Field {
            name: k.clone(),
            value: redact(&match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
        })
        .collect();
    Event {
        id: e.id,
        key: format!("{}-{name}", e.id),
        kind: e.kind.clone(),
        at: e.at,
        severity: match e.severity {
            crate::store::outbox::Severity::Info => Severity::Info,
            crate::store::outbox::Severity::Warning => Severity::Warning,
            crate::store::outbox::Severity::Error => Severity::Error,
        },
        task: e.task,
        run: e.run,
        project: e.project.clone(),
        title: redact(&title),
        text: redact(&text),
        fields,
    }
}
