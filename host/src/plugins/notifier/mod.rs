//! Notifiers: components of the `notifier` world of contract 0.2. Each
//! delivery gets a fresh instance in a fresh store, configured with the
//! notifier's table (secrets resolved), whose only ways out are the host's
//! [`http::HttpBroker`] and [`mail::MailBroker`]; the limits are every plugin's: an epoch deadline,
//! a memory cap, bounded answers, no files, no clock, a watchdog thread.

pub mod allow;
mod check;
pub mod http;
pub mod mail;
pub mod smtp;

use std::sync::Arc;
use std::time::Duration;

use wasmtime::Store;
use wasmtime::component::{Linker, ResourceTable};

use super::engine::PluginEngine;
use super::limits::{
    MAX_CALL_TRANSFER, MAX_HOST_RESOURCES, MAX_LOG_MESSAGE, PluginLimits, TotalLimiter, printable,
};
use super::policy::{PluginError, classify};
use super::sink::{LogBudget, LogSink};
use super::state::PluginState;
use super::wasi::SeededRng;

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/nightjar-plugin@0.2.3",
        world: "notifier",
        with: {
            "nightjar:plugin/types": crate::plugins::v0_2::nightjar::plugin::types,
            "nightjar:plugin/host": crate::plugins::v0_2::nightjar::plugin::host,
        },
    });
}

use crate::sync::LockUnpoisoned;
pub use bindings::exports::nightjar::plugin::notify::{Event, Field, Severity};
use bindings::nightjar::plugin::http as wire_http;
use bindings::nightjar::plugin::mail as wire_mail;

/// Lines `notify test` keeps of a plugin's exchanges (a plugin looping on
/// `send` would otherwise grow the daemon's memory, and the reply, until
/// its deadline).
pub const MAX_JOURNAL: usize = 100;

/// Characters kept of one journal line.
const MAX_JOURNAL_LINE: usize = 1000;

/// Adds `line` to `journal`, within [`MAX_JOURNAL`] lines of
/// [`MAX_JOURNAL_LINE`] characters; then one line says the rest was left out.
pub(crate) fn note(journal: &std::sync::Mutex<Vec<String>>, line: &str) {
    let mut j = journal.lock_unpoisoned();
    match j.len() {
        n if n < MAX_JOURNAL => j.push(super::limits::capped(line, MAX_JOURNAL_LINE)),
        MAX_JOURNAL => j.push(format!(
            "(further exchanges left out: `notify test` keeps the first {MAX_JOURNAL})"
        )),
        _ => {}
    }
}

/// Why a delivery failed, as the plugin (or the host) judged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryFailure {
    /// Worth trying again later.
    Transient(String),
    /// Will never work.
    Permanent(String),
}

impl wire_http::Host for PluginState {
    fn send(
        &mut self,
        req: wire_http::Request,
    ) -> Result<wire_http::Response, wire_http::HttpError> {
        let Some(broker) = self.http.clone() else {
            return Err(wire_http::HttpError::Denied(
                "this plugin may not use http".into(),
            ));
        };
        let r = http::Request {
            method: req.method,
            url: req.url,
            headers: req.headers,
            body: req.body,
        };
        match broker.send(&r) {
            Ok(resp) => Ok(wire_http::Response {
                status: resp.status,
                headers: resp.headers,
                body: resp.body,
            }),
            Err(http::HttpError::Denied(m)) => Err(wire_http::HttpError::Denied(m)),
            Err(http::HttpError::Timeout) => Err(wire_http::HttpError::Timeout),
            Err(http::HttpError::Unreachable(m)) => Err(wire_http::HttpError::Unreachable(m)),
        }
    }
}

impl wire_mail::Host for PluginState {
    fn send(&mut self, m: wire_mail::Message) -> Result<(), wire_mail::MailError> {
        let Some(broker) = self.mail.clone() else {
            return Err(wire_mail::MailError::Denied(
                "this plugin may not send mail".into(),
            ));
        };
        let m = mail::MailMessage {
            to: m.to,
            subject: m.subject,
            text: m.text,
            html: m.html,
            attachments: m
                .attachments
                .into_iter()
                .map(|a| mail::MailAttachment {
                    name: a.name,
                    content_type: a.content_type,
                    body: a.body,
                })
                .collect(),
            key: m.key,
        };
        broker.send(&m).map_err(|e| match e {
            mail::MailError::Denied(t) => wire_mail::MailError::Denied(t),
            mail::MailError::Transient(t) => wire_mail::MailError::Transient(t),
            mail::MailError::Permanent(t) => wire_mail::MailError::Permanent(t),
        })
    }
}

/// A notifier's ways out: its HTTP and its mail.
pub struct Outlets {
    /// Its HTTP.
    pub http: http::HttpBroker,
    /// Its mail.
    pub mail: mail::MailBroker,
}

/// A notifier, compiled and linked once, instantiated per delivery.
pub struct NotifierPlugin {
    /// Its name in the config.
    pub name: String,
    /// sha256 of the component.
    pub sha256: String,
    /// The contract version it exports its interface at (`0.2.3`, or an
    /// earlier 0.2.x for components built before 0.2.3).
    pub contract: String,
    engine: PluginEngine,
    pre: bindings::NotifierPre<PluginState>,
    limits: PluginLimits,
    log_budget: LogBudget,
}

impl NotifierPlugin {
    /// Compiles `wasm` and links it as a notifier.
    pub fn load(
        engine: &PluginEngine,
        name: &str,
        wasm: &[u8],
        limits: PluginLimits,
    ) -> Result<NotifierPlugin, PluginError> {
        let component = engine.component(wasm)?;
        let not_one = |e: wasmtime::Error| {
            PluginError::NotValidator(format!(
                "not a notifier: {e:#} (a notifier exports nightjar:plugin/notify@0.2.x; build it with nightjar_sdk::export_notifier!)"
            ))
        };
        let mut linker: Linker<PluginState> = Linker::new(&engine.engine);
        super::wasi::add_to_linker(&mut linker).map_err(not_one)?;
        bindings::Notifier::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |s| s)
            .map_err(not_one)?;
        let pre = linker.instantiate_pre(&component).map_err(not_one)?;
        let pre = bindings::NotifierPre::new(pre).map_err(not_one)?;
        let sha256 = super::sha256(wasm);
        let contract =
            super::version::exported_at(&engine.engine, &component, "nightjar:plugin/notify")
                .unwrap_or_else(|| super::version::ApiVersion::LATEST.to_string());
        Ok(NotifierPlugin {
            name: name.to_string(),
            sha256,
            contract,
            engine: engine.clone(),
            pre,
            log_budget: LogBudget::new(name, limits.log_bytes_per_minute),
            limits,
        })
    }

    /// Delivers `events` on a fresh instance configured with `config`,
    /// reaching out only through `out`, within `deadline` (a watchdog
    /// abandons a call stuck past it).
    pub fn deliver(
        self: &Arc<Self>,
        config: &str,
        events: Vec<Event>,
        out: Outlets,
        deadline: Duration,
    ) -> Result<(), DeliveryFailure> {
        let me = Arc::clone(self);
        let config = config.to_string();
        let watchdog = PluginLimits::watchdog(deadline);
        let r = super::worker::contained(
            super::worker::Budget::daemon(super::worker::Kind::Notifier),
            &self.name,
            watchdog,
            move || Ok(me.call(&config, &events, out, deadline)),
        );
        match r {
            Ok(r) => r,
            Err(e) => Err(DeliveryFailure::Transient(format!("the notifier {e}"))),
        }
    }

    fn call(
        &self,
        config: &str,
        events: &[Event],
        out: Outlets,
        deadline: Duration,
    ) -> Result<(), DeliveryFailure> {
        let sink = LogSink::default();
        let secrets = out.http.secrets().to_vec();
        let rng = SeededRng::default();
        rng.seed(events.first().map_or(0, |e| e.id as u64));
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HOST_RESOURCES);
        let state = PluginState {
            name: self.name.clone(),
            wasi: super::wasi::context(&sink, &rng),
            table,
            limits: TotalLimiter::new(self.limits.memory),
            log_lines: self.limits.log_lines,
            log_budget: self.log_budget.clone(),
            rng,
            http: Some(Arc::new(out.http)),
            mail: Some(Arc::new(out.mail)),
            tariff: None,
            tariff_spans: Default::default(),
        };
        let mut store = Store::new(&self.engine.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_hostcall_fuel(MAX_CALL_TRANSFER);
        store.set_epoch_deadline(PluginEngine::ticks(deadline));
        let answer = self.engine.with_deadline(|| {
            let live = self.pre.instantiate(&mut store)?;
            let n = live.nightjar_plugin_notify();
            if let Err(e) = n.call_configure(&mut store, config)? {
                return Ok(Err(DeliveryFailure::Permanent(format!(
                    "its config was refused{}: {}",
                    e.key.map(|k| format!(" at `{k}`")).unwrap_or_default(),
                    printable(&e.message, MAX_LOG_MESSAGE)
                ))));
            }
            Ok::<_, wasmtime::Error>(match n.call_deliver(&mut store, events)? {
                Ok(()) => Ok(()),
                Err(bindings::exports::nightjar::plugin::notify::DeliveryError::Transient(m)) => {
                    Err(DeliveryFailure::Transient(printable(&m, MAX_LOG_MESSAGE)))
                }
                Err(bindings::exports::nightjar::plugin::notify::DeliveryError::Permanent(m)) => {
                    Err(DeliveryFailure::Permanent(printable(&m, MAX_LOG_MESSAGE)))
                }
            })
        });
        sink.to_log(&self.name, &self.log_budget, &secrets);
        match answer {
            Ok(r) => r,
            // A trap, a timeout or a memory cap: the plugin's fault, maybe
            // passing (a slow server); tried again on the schedule.
            Err(e) => Err(DeliveryFailure::Transient(format!(
                "the notifier {}",
                classify(e, deadline, self.limits.memory)
            ))),
        }
    }
}
