//! The `mail` a notifier may call, brokered by the host: through the SMTP
//! server of `[mail]` (its TLS mode, credentials and sender, which the
//! plugin never sees), only to recipients on the notifier's allow-list (an
//! address, or `@domain`), bounded in size, with a `Message-ID` made from
//! the delivery's idempotency key so a repeat after a crash is recognisable.

use std::sync::{Arc, Mutex};

use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{Address, Message, SmtpTransport, Transport};

use crate::config::{MailConfig, MailTls};

/// Most recipients of one message.
pub const MAX_RECIPIENTS: usize = 50;

/// Most bytes of one message, attachments included (what one call copies).
pub const MAX_MESSAGE: usize = 1 << 20;

/// Longest subject kept (RFC 5322's line limit).
const MAX_SUBJECT: usize = 998;

/// A file sent with a message.
#[derive(Debug, Clone)]
pub struct MailAttachment {
    /// The name shown.
    pub name: String,
    /// Its MIME type.
    pub content_type: String,
    /// Its bytes.
    pub body: Vec<u8>,
}

/// A message, as the plugin asked.
#[derive(Debug, Clone, Default)]
pub struct MailMessage {
    /// Recipients.
    pub to: Vec<String>,
    /// Subject (one line).
    pub subject: String,
    /// Plain text.
    pub text: String,
    /// HTML alternative.
    pub html: Option<String>,
    /// Files.
    pub attachments: Vec<MailAttachment>,
    /// The delivery's idempotency key.
    pub key: String,
}

/// Why a message was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailError {
    /// Refused by the host; the text says why.
    Denied(String),
    /// Worth trying again.
    Transient(String),
    /// Refused by the server for good.
    Permanent(String),
}

/// One allow-list entry for recipients: an address or a whole domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recipient {
    /// `alice@lab.example.edu` (any case).
    Address(String),
    /// `@lab.example.edu`: every address of that domain (not subdomains).
    Domain(String),
}

/// Parses an allow-list entry that names mail recipients (it holds `@`).
pub fn parse_recipient(e: &str) -> Result<Recipient, String> {
    let e = e.trim().to_ascii_lowercase();
    if let Some(domain) = e.strip_prefix('@') {
        if domain.is_empty() || domain.contains(['@', '/', ' ', '*']) || !domain.contains('.') {
            return Err(format!(
                "`{e}` is not a mail domain; write `@lab.example.edu` (no wildcard)"
            ));
        }
        return Ok(Recipient::Domain(domain.to_string()));
    }
    e.parse::<Address>()
        .map(|_| Recipient::Address(e.clone()))
        .map_err(|err| {
            format!("`{e}` is not a mail address ({err}); write `alice@lab.example.edu` or `@lab.example.edu`")
        })
}

/// The host's SMTP settings, resolved (password read, CA loaded).
pub struct MailSettings {
    cfg: MailConfig,
    from: Mailbox,
    credentials: Option<Credentials>,
    roots: Vec<Certificate>,
    /// The password, to cut out of every text.
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
        Ok(MailSettings {
            cfg: cfg.clone(),
            from,
            credentials,
            roots,
            secrets: password.into_iter().collect(),
        })
    }

    fn transport(&self) -> Result<SmtpTransport, MailError> {
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
        let mut b = SmtpTransport::builder_dangerous(server)
            .port(self.cfg.port())
            .tls(tls)
            .timeout(Some(self.cfg.timeout));
        if let Some(c) = &self.credentials {
            b = b.credentials(c.clone());
        }
        Ok(b.build())
    }
}

/// One notifier's mail.
#[derive(Clone)]
pub struct MailBroker {
    settings: Option<Arc<Result<MailSettings, String>>>,
    allow: Vec<Recipient>,
    secrets: Vec<String>,
    journal: Option<Arc<Mutex<Vec<String>>>>,
}

impl MailBroker {
    /// A broker sending through `settings` (`None`: no `[mail]`) to the
    /// recipients on `allow` (entries without `@` are HTTP hosts, skipped);
    /// `secrets` are cut out of every error text.
    pub fn new(
        settings: Option<Arc<Result<MailSettings, String>>>,
        allow: &[String],
        secrets: Vec<String>,
    ) -> MailBroker {
        MailBroker {
            settings,
            allow: allow
                .iter()
                .filter(|a| a.contains('@'))
                .filter_map(|a| parse_recipient(a).ok())
                .collect(),
            secrets,
            journal: None,
        }
    }

    /// Keeps a line per message (the server's answer, redacted): what
    /// `notify test` prints.
    pub fn with_journal(mut self, journal: Arc<Mutex<Vec<String>>>) -> Self {
        self.journal = Some(journal);
        self
    }

    fn redact(&self, text: &str) -> String {
        let mut secrets = self.secrets.clone();
        if let Some(Ok(s)) = self.settings.as_deref() {
            secrets.extend(s.secrets.iter().cloned());
        }
        crate::notify::secrets::redact(text, &secrets)
    }

    fn admits(&self, to: &Address) -> bool {
        let addr = to.to_string().to_ascii_lowercase();
        let domain = to.domain().to_ascii_lowercase();
        self.allow.iter().any(|r| match r {
            Recipient::Address(a) => *a == addr,
            Recipient::Domain(d) => *d == domain,
        })
    }

    /// Sends `m` through the host's server, or says why not.
    pub fn send(&self, m: &MailMessage) -> Result<(), MailError> {
        let r = self.exchange(m).map_err(|e| match e {
            MailError::Denied(t) => MailError::Denied(self.redact(&t)),
            MailError::Transient(t) => MailError::Transient(self.redact(&t)),
            MailError::Permanent(t) => MailError::Permanent(self.redact(&t)),
        });
        if let Some(j) = &self.journal {
            let line = match &r {
                Ok(()) => format!("mail to {} -> accepted", m.to.join(", ")),
                Err(e) => format!("mail to {} -> {e:?}", m.to.join(", ")),
            };
            j.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
        r
    }

    fn exchange(&self, m: &MailMessage) -> Result<(), MailError> {
        let settings = match self.settings.as_deref() {
            None => {
                return Err(MailError::Denied(
                    "this daemon has no [mail] table (its SMTP server); add one to send mail"
                        .into(),
                ));
            }
            // Fixable without touching the events (an unset variable): retried.
            Some(Err(e)) => return Err(MailError::Transient(e.clone())),
            Some(Ok(s)) => s,
        };
        let message = self.build(settings, m)?;
        let transport = settings.transport()?;
        match transport.send(&message) {
            Ok(_) => Ok(()),
            Err(e) if e.is_permanent() => Err(MailError::Permanent(format!(
                "the SMTP server refused the message: {e}"
            ))),
            Err(e) => Err(MailError::Transient(format!(
                "SMTP {}:{}: {}",
                settings.cfg.server,
                settings.cfg.port(),
                super::http::chain(&e)
            ))),
        }
    }

    fn build(&self, settings: &MailSettings, m: &MailMessage) -> Result<Message, MailError> {
        let deny = |t: String| Err(MailError::Denied(t));
        if m.to.is_empty() {
            return deny("the message has no recipient".into());
        }
        if m.to.len() > MAX_RECIPIENTS {
            return deny(format!(
                "{} recipients; at most {MAX_RECIPIENTS}",
                m.to.len()
            ));
        }
        let size = m.text.len()
            + m.html.as_ref().map_or(0, String::len)
            + m.subject.len()
            + m.attachments.iter().map(|a| a.body.len()).sum::<usize>();
        if size > MAX_MESSAGE {
            return deny(format!(
                "the message has {size} bytes; at most {MAX_MESSAGE}"
            ));
        }
        let mut b = Message::builder()
            .from(settings.from.clone())
            .subject(one_line(&m.subject))
            .message_id(Some(message_id(&m.key)))
            .date_now();
        for to in &m.to {
            let Ok(addr) = to.trim().parse::<Address>() else {
                return deny(format!("`{}` is not a mail address", printable(to)));
            };
            if !self.admits(&addr) {
                return deny(format!(
                    "{addr} is not on this notifier's allow-list (`allow` in its [notifier.NAME] table: the address, or `@{}`)",
                    addr.domain()
                ));
            }
            b = b.to(Mailbox::new(None, addr));
        }
        let body = match &m.html {
            Some(html) => MultiPart::alternative_plain_html(m.text.clone(), html.clone()),
            None => MultiPart::mixed().singlepart(SinglePart::plain(m.text.clone())),
        };
        let body = m.attachments.iter().try_fold(body, |body, a| {
            let ct = ContentType::parse(&a.content_type).map_err(|_| {
                MailError::Denied(format!(
                    "attachment `{}`: `{}` is not a MIME type",
                    printable(&a.name),
                    printable(&a.content_type)
                ))
            })?;
            let part = Attachment::new(one_line(&a.name)).body(a.body.clone(), ct);
            Ok::<_, MailError>(MultiPart::mixed().multipart(body).singlepart(part))
        })?;
        b.multipart(body)
            .map_err(|e| MailError::Denied(format!("cannot build the message: {e}")))
    }
}

/// `Message-ID` of the delivery with `key`: the same key, the same id.
fn message_id(key: &str) -> String {
    let safe = |t: &str| -> String {
        t.chars()
            .filter(|c| c.is_ascii_alphanumeric() || "-._".contains(*c))
            .take(200)
            .collect()
    };
    let host = safe(crate::notify::event::host_name());
    let host = if host.is_empty() {
        "localhost".into()
    } else {
        host
    };
    format!("<nightjar.{}@{host}>", safe(key))
}

/// `text` on one line, cut at [`MAX_SUBJECT`] bytes on a char boundary.
fn one_line(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if out.len() > MAX_SUBJECT {
        let mut end = MAX_SUBJECT;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
}

fn printable(text: &str) -> String {
    one_line(text).chars().take(100).collect()
}

#[cfg(test)]
#[path = "mail_tests.rs"]
mod tests;
