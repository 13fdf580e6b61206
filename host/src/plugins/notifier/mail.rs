//! The `mail` a notifier may call, brokered by the host: through the SMTP
//! server of `[mail]` (its TLS mode, credentials and sender, which the
//! plugin never sees), only to recipients on the notifier's allow-list (an
//! address, or `@domain`), bounded in size, with a `Message-ID` made from
//! the delivery's idempotency key so a repeat after a crash is recognisable.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Attachment, Body, Mailbox, MultiPart, SinglePart};
use lettre::{Address, Message};

pub use super::smtp::MailSettings;
#[cfg(test)]
use crate::config::MailConfig;

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

/// One notifier's mail, for one delivery.
#[derive(Clone)]
pub struct MailBroker {
    settings: Option<Arc<Result<MailSettings, String>>>,
    allow: Vec<Recipient>,
    secrets: Vec<String>,
    journal: Option<Arc<Mutex<Vec<String>>>>,
    until: Option<Instant>,
    most: usize,
    tried: Arc<AtomicUsize>,
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
            until: None,
            most: usize::MAX,
            tried: Arc::default(),
        }
    }

    /// Keeps a line per message (the server's answer, redacted): what
    /// `notify test` prints.
    pub fn with_journal(mut self, journal: Arc<Mutex<Vec<String>>>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Ends every conversation by `at` (the delivery's deadline) at the
    /// latest, and tries none after it.
    pub fn until(mut self, at: Instant) -> Self {
        self.until = Some(at);
        self
    }

    /// Tries at most `n` messages (a plugin looping on `send` writes to
    /// people: each try counts, accepted or not).
    pub fn at_most(mut self, n: usize) -> Self {
        self.most = n;
        self
    }

    fn redact(&self, text: &str) -> String {
        let mut secrets = self.secrets.clone();
        if let Some(Ok(s)) = self.settings.as_deref() {
            secrets.extend(s.secrets.iter().cloned());
        }
        crate::secrets::redact(text, &secrets)
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
            let to: Vec<String> =
                m.to.iter()
                    .take(MAX_RECIPIENTS)
                    .map(|t| printable(t))
                    .collect();
            let line = match &r {
                Ok(()) => format!("mail to {} -> accepted", to.join(", ")),
                Err(e) => format!("mail to {} -> {e:?}", to.join(", ")),
            };
            super::note(j, &line);
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
        let bytes = message.formatted();
        if let Some(at) = bare_line_end(&bytes) {
            return Err(MailError::Denied(format!(
                "the message has a bare CR or LF at byte {at} (a server could read it as the end of the message)"
            )));
        }
        let left = self
            .until
            .map(|u| u.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            return Err(MailError::Transient(
                "no time left before the delivery's deadline (notify.timeout)".into(),
            ));
        }
        if self.tried.fetch_add(1, Ordering::SeqCst) >= self.most {
            return Err(MailError::Denied(format!(
                "at most {} messages in one delivery (one per event it carries, and 10 more)",
                self.most
            )));
        }
        settings.send(message.envelope(), &bytes, settings.budget(left))
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
            .message_id(Some(message_id(m)))
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
        let (text, html) = (lf_only(&m.text), m.html.as_deref().map(lf_only));
        let body = match html {
            Some(html) => MultiPart::alternative_plain_html(text, html),
            None => MultiPart::mixed().singlepart(SinglePart::plain(text)),
        };
        let body = m.attachments.iter().try_fold(body, |body, a| {
            let ct = ContentType::parse(&a.content_type).map_err(|_| {
                MailError::Denied(format!(
                    "attachment `{}`: `{}` is not a MIME type",
                    printable(&a.name),
                    printable(&a.content_type)
                ))
            })?;
            // Base64 whatever the bytes: sent as they are (7bit), a bare
            // line end in them would reach the server unescaped.
            let bytes = Body::new_with_encoding(a.body.clone(), ContentTransferEncoding::Base64)
                .map_err(|_| {
                    MailError::Denied(format!(
                        "attachment `{}`: cannot encode it",
                        printable(&a.name)
                    ))
                })?;
            let part = Attachment::new(one_line(&a.name)).body(bytes, ct);
            Ok::<_, MailError>(MultiPart::mixed().multipart(body).singlepart(part))
        })?;
        b.multipart(body)
            .map_err(|e| MailError::Denied(format!("cannot build the message: {e}")))
    }
}

/// `text` with every line ending a lone LF (lettre makes each LF a CRLF; a
/// lone CR it would send as it is).
fn lf_only(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Where `bytes` has a CR not followed by LF, or an LF not after a CR: a
/// server that takes `<LF>.<CRLF>` or `<CR>.<CR>` for the end of DATA
/// would run what follows as commands of the daemon's own session (SMTP
/// smuggling: any sender, any recipient).
fn bare_line_end(bytes: &[u8]) -> Option<usize> {
    bytes.iter().enumerate().position(|(i, b)| match b {
        b'\r' => bytes.get(i + 1) != Some(&b'\n'),
        b'\n' => i == 0 || bytes[i - 1] != b'\r',
        _ => false,
    })
}

/// `Message-ID` of message `m`: from its key, the same key, the same id. A
/// key that is not plain letters, digits, `-` and `_` is hashed (two keys
/// never share an id, and the id stays valid); without a key, the
/// recipients, subject and text are.
fn message_id(m: &MailMessage) -> String {
    let plain = |t: &str| {
        !t.is_empty()
            && t.len() <= 200
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    let left = if plain(&m.key) {
        m.key.clone()
    } else if m.key.is_empty() {
        let content = format!("{:?}", (&m.to, &m.subject, &m.text));
        format!("c{}", &crate::plugins::sha256(content.as_bytes())[..32])
    } else {
        format!("k{}", &crate::plugins::sha256(m.key.as_bytes())[..32])
    };
    let host: String = crate::sys::host_name()
        .split('.')
        .map(|l| {
            l.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .take(63)
                .collect::<String>()
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(".");
    let host = if host.is_empty() {
        "localhost".into()
    } else {
        host
    };
    format!("<nightjar.{left}@{host}>")
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

/// What a plugin gave, quoted in an error: control characters escaped, 100 at most.
fn printable(text: &str) -> String {
    crate::plugins::limits::printable(text, 100)
}

#[cfg(test)]
#[path = "mail_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "smtp_tests.rs"]
mod smtp_tests;
