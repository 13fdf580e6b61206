//! `email`: events as mail, through the host's SMTP server.
//!
//! ```toml
//! [mail]                                   # the host's, once for every notifier:
//! server = "smtp.lab.example.edu"          # the plugin never sees these
//! from = "nightjar <nightjar@gpu1.lab.example.edu>"
//! user = "nightjar"
//! password = "env:NIGHTJAR_SMTP_PASSWORD"
//!
//! [notifier.mail]
//! plugin = "email"                         # the host's keys (plugin, events, allow, ...)
//! allow = ["@lab.example.edu"]             # recipients it may write to
//! to = ["gpu-users@lab.example.edu"]       # required; this plugin's keys from here
//! projects = { vision = ["alice@lab.example.edu"] }   # per project, instead of `to`
//! subject = "[nightjar] {title}"           # the default
//! html = true                              # an HTML alternative (default true)
//! ```
//!
//! The subject may use `{title}`, `{kind}`, `{project}`, `{task}`,
//! `{severity}` and `{count}` (`{{` and `}}` are braces); `{project}` and
//! `{task}` are empty when a summary spans several. Every recipient must
//! also be on the notifier's `allow` (the host refuses the rest).
//!
//! # The message
//!
//! One event: its title as `{title}`, its text (what happened, what to do,
//! the end of stderr, `nightjar show ID`), then its facts one per line. The
//! HTML alternative has the same content. Several events (a rate-limited
//! notifier, or a digest) make one summary mail per recipient list: a list
//! of titles, then the first 50 in full. The host sets `Message-ID` from
//! the first event's key, so a mail repeated after a crash has the same id.
//!
//! # Outcomes
//!
//! Accepted by the server is delivered. No connection, a timeout or a 4xx
//! reply is transient (the host retries later); a 5xx reply, a recipient
//! not allow-listed, or a daemon without `[mail]` is permanent. When the
//! events of one call go to several recipient lists and one fails, the
//! call fails: the host sends them all again, under the same keys.

use nightjar_sdk::{ConfigError, DeliveryError, Event, Notifier, export_notifier};

mod config;
mod message;

pub use config::{Config, DEFAULT_SUBJECT, PLACEHOLDERS, fill};
pub use message::{DETAILED, MAX_BODY, escape, message};

/// The `email` notifier.
pub struct Email;

impl Notifier for Email {
    type Config = Config;

    fn deliver(config: &Config, events: &[Event]) -> Result<(), DeliveryError> {
        // One mail per recipient list, in the order each list first appears.
        let mut groups: Vec<(&[String], Vec<Event>)> = Vec::new();
        for e in events {
            let to = config.recipients(e.project.as_deref());
            match groups.iter_mut().find(|(t, _)| *t == to) {
                Some((_, g)) => g.push(e.clone()),
                None => groups.push((to, vec![e.clone()])),
            }
        }
        for (to, group) in groups {
            nightjar_sdk::mail::send(message(config, to, &group))
                .map_err(|e| DeliveryError::from(e).map_message(|m| format!("email: {m}")))?;
        }
        Ok(())
    }

    fn check_config(config: &Config) -> Result<(), ConfigError> {
        config.check()
    }
}

export_notifier!(Email);

#[cfg(test)]
mod tests;
