//! Outbound mail for notifiers, brokered by the host.
//!
//! A notifier has no SMTP of its own: [`send`] hands a [`Message`] to the
//! host (the `mail` import of world `notifier`), which sends it through the
//! daemon's `[mail]` server, as its `from`, with its credentials: a plugin
//! never sees them. Every recipient must be on the notifier's allow-list in
//! the daemon config (an address, or `@domain`); the host sets `Message-ID`
//! from the message's `key`, so a delivery repeated after a crash carries
//! the same id. A whole message is at most 1 MiB, and one delivery may try
//! at most one message per event it carries, plus 10.
//!
//! ```no_run
//! use nightjar_sdk::{DeliveryError, mail};
//!
//! fn tell(to: &[String], key: &str) -> Result<(), DeliveryError> {
//!     let m = mail::Message::new(to.to_vec(), "task 4 failed", "It failed.\n", key)
//!         .html("<p>It failed.</p>");
//!     Ok(mail::send(m)?)
//! }
//! ```
//!
//! Natively (in unit tests) there is no host: [`send`] asks the
//! [`testing::MailMock`](crate::testing::MailMock) installed on the calling
//! thread, and without one answers [`MailError::Transient`].

use std::fmt;

use crate::DeliveryError;

/// A file sent with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The file name shown (`report.html`).
    pub name: String,
    /// Its MIME type (`text/html`).
    pub content_type: String,
    /// Its bytes.
    pub body: Vec<u8>,
}

/// A message for the host to send.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// Recipients' addresses, each on the notifier's allow-list.
    pub to: Vec<String>,
    /// One line.
    pub subject: String,
    /// The plain-text body.
    pub text: String,
    /// An HTML alternative of the same content.
    pub html: Option<String>,
    /// Files sent with it.
    pub attachments: Vec<Attachment>,
    /// The delivery's idempotency key (an [`Event`](crate::Event)'s `key`).
    pub key: String,
}

impl Message {
    /// A plain-text message.
    pub fn new(
        to: Vec<String>,
        subject: impl Into<String>,
        text: impl Into<String>,
        key: impl Into<String>,
    ) -> Message {
        Message {
            to,
            subject: subject.into(),
            text: text.into(),
            key: key.into(),
            ..Message::default()
        }
    }

    /// Adds an HTML alternative.
    pub fn html(mut self, html: impl Into<String>) -> Message {
        self.html = Some(html.into());
        self
    }

    /// Adds a file.
    pub fn attach(
        mut self,
        name: impl Into<String>,
        content_type: impl Into<String>,
        body: impl Into<Vec<u8>>,
    ) -> Message {
        self.attachments.push(Attachment {
            name: name.into(),
            content_type: content_type.into(),
            body: body.into(),
        });
        self
    }
}

/// Why the message was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailError {
    /// The host refused it (a recipient not allow-listed, no `[mail]`, too
    /// large); the text says which.
    Denied(String),
    /// Worth trying again (no connection, a 4xx reply, a timeout).
    Transient(String),
    /// The server refused it for good (a 5xx reply).
    Permanent(String),
}

impl fmt::Display for MailError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MailError::Denied(why) => write!(f, "the host refused the mail: {why}"),
            MailError::Transient(why) => write!(f, "mail not sent, for now: {why}"),
            MailError::Permanent(why) => write!(f, "mail refused: {why}"),
        }
    }
}

impl std::error::Error for MailError {}

/// A refusal by the host or a 5xx will come again (fix the config or the
/// address): permanent. The rest may pass: transient.
impl From<MailError> for DeliveryError {
    fn from(e: MailError) -> DeliveryError {
        match e {
            MailError::Denied(_) | MailError::Permanent(_) => {
                DeliveryError::Permanent(e.to_string())
            }
            MailError::Transient(_) => DeliveryError::Transient(e.to_string()),
        }
    }
}

/// Sends `message` through the host and waits for the server's answer.
/// Natively, the calling thread's [`MailMock`](crate::testing::MailMock)
/// answers.
pub fn send(message: Message) -> Result<(), MailError> {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::notifier_bindings::nightjar::plugin::mail as abi;
        let answer = abi::send(&abi::Message {
            to: message.to,
            subject: message.subject,
            text: message.text,
            html: message.html,
            attachments: message
                .attachments
                .into_iter()
                .map(|a| abi::Attachment {
                    name: a.name,
                    content_type: a.content_type,
                    body: a.body,
                })
                .collect(),
            key: message.key,
        });
        match answer {
            Ok(()) => Ok(()),
            Err(abi::MailError::Denied(why)) => Err(MailError::Denied(why)),
            Err(abi::MailError::Transient(why)) => Err(MailError::Transient(why)),
            Err(abi::MailError::Permanent(why)) => Err(MailError::Permanent(why)),
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    crate::testing::mail::answer(message)
}
