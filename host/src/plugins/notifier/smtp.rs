//! The host's side of SMTP: `[mail]` resolved (password read, CA loaded)
//! and one conversation with the server, bounded as a whole.
//!
//! The conversation runs on lettre's tokio transport under one deadline (the
//! smaller of `[mail] timeout` and what is left of the delivery's): lettre's
//! blocking transport bounds each read, not their sum, so a server dripping
//! a byte at a time would hold the call, and the plugin thread the watchdog
//! abandons, for hours. The password is cut out of every text in each form
//! it takes on the wire (as itself, and base64 in `AUTH PLAIN` and `AUTH
//! LOGIN`), since a server may echo what it was sent in its refusal.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use lettre::address::Envelope;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::mail::MailError;
use crate::config::{MailConfig, MailTls};

/// The host's SMTP settings, resolved (password read, CA loaded).
pub struct MailSettings {
    cfg: MailConfig,
    /// The sender.
    pub from: Mailbox,
    credentials: Option<Credentials>,
    roots: Vec<Certificate>,
    /// The password and its forms on the wire, to cut out of every text.
    pub secrets: Vec<String>,
}

impl MailSettings {
    /// Resolves `[mail]`: reads the password reference and the CA file.
    /// The error names the key and never the value.
    pub fn resolve(cfg: &MailConfig) -> Result<MailSettings, String> {
        let from = cfg
            .from
            .parse::<Mailbox>()
            .map_err(|e| format!("[mail] from: {e}"))?;
        let password = match &cfg.password {
            Some(r) => Some(crate::notify::secrets::resolve_at("[mail] password", r)?),
            None => None,
        };
        let credentials = cfg
            .user
            .as_ref()
            .map(|u| Credentials::new(u.clone(), password.clone().unwrap_or_default()));
        let mut roots = Vec::new();
        if let Some(ca) = &cfg.ca {
            let pem = std::fs::read(ca)
                .map_err(|e| format!("[mail] ca: cannot read {}: {e}", ca.display()))?;
            roots.push(Certificate::from_pem(&pem).map_err(|e| {
                format!("[mail] ca: {} is not PEM certificates: {e}", ca.display())
            })?);
        }
        let secrets = match (&password, &cfg.user) {
            (Some(p), user) => vec![
                p.clone(),
                // AUTH LOGIN sends the password alone, AUTH PLAIN
                // `\0user\0password`, each in base64.
                B64.encode(p),
                B64.encode(format!("\0{}\0{p}", user.as_deref().unwrap_or_default())),
            ],
            (None, _) => Vec::new(),
        };
        Ok(MailSettings {
            cfg: cfg.clone(),
            from,
            credentials,
            roots,
            secrets,
        })
    }

    /// `server:port`, as texts name it.
    pub fn name(&self) -> String {
        format!("{}:{}", self.cfg.server.trim(), self.cfg.port())
    }

    /// The whole conversation's bound: `[mail] timeout`, or what is left of
    /// the delivery's deadline (`left`) when that is less.
    pub fn budget(&self, left: Option<Duration>) -> Duration {
        left.map_or(self.cfg.timeout, |l| l.min(self.cfg.timeout))
    }

    fn transport(&self) -> Result<AsyncSmtpTransport<Tokio1Executor>, MailError> {
        let server = self.cfg.server.trim();
        let params = || {
            let mut b = TlsParameters::builder(server.to_string());
            for r in &self.roots {
                b = b.add_root_certificate(r.clone());
            }
            b.build_rustls()
                .map_err(|e| MailError::Transient(format!("TLS set-up for {server}: {e}")))
        };
        let tls = match self.cfg.tls {
            MailTls::Starttls => Tls::Required(params()?),
            MailTls::Tls => Tls::Wrapper(params()?),
            MailTls::None => Tls::None,
        };
        let mut b = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(server)
            .port(self.cfg.port())
            .tls(tls)
            .timeout(Some(self.cfg.timeout));
        if let Some(c) = &self.credentials {
            b = b.credentials(c.clone());
        }
        Ok(b.build())
    }

    /// Sends `bytes` to `envelope`'s recipients through the server, the
    /// whole conversation within `budget`. Texts are not redacted here.
    pub fn send(
        &self,
        envelope: &Envelope,
        bytes: &[u8],
        budget: Duration,
    ) -> Result<(), MailError> {
        let transport = self.transport()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| MailError::Transient(format!("cannot start the SMTP client: {e}")))?;
        let r = rt.block_on(async {
            tokio::time::timeout(budget, transport.send_raw(envelope, bytes)).await
        });
        // A name lookup still going on a blocking thread is left to end alone.
        rt.shutdown_background();
        match r {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if e.is_permanent() => Err(MailError::Permanent(format!(
                "the SMTP server {} refused: {e}",
                self.name()
            ))),
            Ok(Err(e)) => Err(MailError::Transient(format!(
                "SMTP {}: {}",
                self.name(),
                super::http::chain(&e)
            ))),
            Err(_) => Err(MailError::Transient(format!(
                "SMTP {}: no end to the conversation within {} ([mail] timeout, or what was left of the delivery's notify.timeout)",
                self.name(),
                crate::time::fmt_span(budget.as_millis() as i64)
            ))),
        }
    }
}
