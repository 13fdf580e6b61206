//! The host's side of SMTP: `[mail]` resolved (password read, CA loaded)
//! and one conversation with the server, bounded as a whole.
//!
//! The conversation runs on lettre's tokio connection under one deadline
//! (the smaller of `[mail] timeout` and what is left of the delivery's):
//! lettre's blocking transport bounds each read, not their sum, so a server
//! dripping a byte at a time would hold the call, and the plugin thread the
//! watchdog abandons, for hours. A message the server accepted is delivered,
//! however it answers QUIT. The password is cut out of every text in each form
//! it takes on the wire (as itself, and base64 in `AUTH PLAIN` and `AUTH
//! LOGIN`), since a server may echo what it was sent in its refusal.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use lettre::address::Envelope;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::{Credentials, DEFAULT_MECHANISMS};
use lettre::transport::smtp::client::{AsyncSmtpConnection, Certificate, TlsParameters};
use lettre::transport::smtp::extension::ClientId;

use super::mail::MailError;
use crate::config::{MailConfig, MailTls};

/// How long the server is given to answer QUIT once it accepted the message.
const QUIT_WAIT: Duration = Duration::from_secs(1);

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
            Some(r) => Some(crate::secrets::resolve_at("[mail] password", r)?),
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

    /// The TLS parameters for the server, when its mode uses TLS.
    fn tls(&self) -> Result<Option<TlsParameters>, MailError> {
        if self.cfg.tls == MailTls::None {
            return Ok(None);
        }
        let server = self.cfg.server.trim();
        let mut b = TlsParameters::builder(server.to_string());
        for r in &self.roots {
            b = b.add_root_certificate(r.clone());
        }
        b.build_rustls()
            .map(Some)
            .map_err(|e| MailError::Transient(format!("TLS set-up for {server}: {e}")))
    }

    /// Connects (TLS from the first byte, or STARTTLS, which the server must
    /// offer and then do), logs in, and hands over the message: the
    /// connection once the server accepted it.
    async fn converse(
        &self,
        tls: Option<TlsParameters>,
        envelope: &Envelope,
        bytes: &[u8],
    ) -> Result<AsyncSmtpConnection, lettre::transport::smtp::Error> {
        let hello = ClientId::default();
        let wrapper = match self.cfg.tls {
            MailTls::Tls => tls.clone(),
            _ => None,
        };
        let mut conn = AsyncSmtpConnection::connect_tokio1(
            (self.cfg.server.trim(), self.cfg.port()),
            Some(self.cfg.timeout),
            &hello,
            wrapper,
            None,
        )
        .await?;
        if let (MailTls::Starttls, Some(params)) = (self.cfg.tls, tls) {
            conn.starttls(params, &hello).await?;
        }
        if let Some(c) = &self.credentials {
            conn.auth(DEFAULT_MECHANISMS, c).await?;
        }
        conn.send(envelope, bytes).await?;
        Ok(conn)
    }

    /// Sends `bytes` to `envelope`'s recipients through the server, the
    /// whole conversation within `budget`. Texts are not redacted here.
    pub fn send(
        &self,
        envelope: &Envelope,
        bytes: &[u8],
        budget: Duration,
    ) -> Result<(), MailError> {
        let tls = self.tls()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| MailError::Transient(format!("cannot start the SMTP client: {e}")))?;
        let r = rt.block_on(async {
            match tokio::time::timeout(budget, self.converse(tls, envelope, bytes)).await {
                Ok(Ok(mut conn)) => {
                    // Accepted: a server slow to answer QUIT cannot undo
                    // that (told as failed, the message would go again).
                    let _ = tokio::time::timeout(QUIT_WAIT, conn.abort()).await;
                    Ok(Ok(()))
                }
                Ok(Err(e)) => Ok(Err(e)),
                Err(late) => Err(late),
            }
        });
        // A name lookup still going on a blocking thread is left to end alone.
        rt.shutdown_background();
        match r {
            Ok(Ok(())) => Ok(()),
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
