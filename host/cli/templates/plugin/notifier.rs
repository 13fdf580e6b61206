//! `{{name}}`: a nightjar notifier, made by `nightjar plugins new`.
//!
//! As written it POSTs each delivery as one JSON object (`events`: kind,
//! title, text and task of each) to the URL its config names, through the
//! host's HTTP (the daemon allows only the hosts the config lists).
//! Replace `deliver` with your message.
//!
//! Config (a `[notifier.NAME]` table in the daemon config; see the README):
//!
//! ```toml
//! url = "https://chat.example.org/hooks/lab"
//! ```

use nightjar_sdk::{ConfigError, DeliveryError, Event, Notifier, http};

/// The configuration: every key has a default, a misspelt key is an error.
#[derive(serde::Deserialize, Default, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the events go (http or https).
    url: String,
    /// What the host resolved from the table's `secrets` (`secrets = {
    /// token = "env:NAME" }` gives `secrets["token"]`); never put one in a
    /// message or an error. Unused as written.
    #[allow(dead_code)]
    secrets: std::collections::BTreeMap<String, String>,
}

/// The notifier.
pub struct {{Type}};

impl Notifier for {{Type}} {
    type Config = Config;

    fn check_config(config: &Config) -> Result<(), ConfigError> {
        let ok = config.url.is_empty()
            || config.url.starts_with("https://")
            || config.url.starts_with("http://");
        if ok {
            Ok(())
        } else {
            Err(ConfigError::at(
                "url",
                format!("{:?} is not an http(s) URL", config.url),
            ))
        }
    }

    fn deliver(config: &Config, events: &[Event]) -> Result<(), DeliveryError> {
        if config.url.is_empty() {
            return Err(DeliveryError::permanent(
                "no `url` in its config: set url = \"https://...\" in its table",
            ));
        }
        // One message, however many events: several come only when the
        // host rate-limits this notifier, and are sent as one summary.
        let events: Vec<_> = events
            .iter()
            .map(|e| {
                serde_json::json!({
                    "kind": e.kind,
                    "title": e.title,
                    "text": e.text,
                    "task": e.task,
                })
            })
            .collect();
        let body = serde_json::json!({ "events": events }).to_string();
        http::post_json(&config.url, [("x-sender", "nightjar")], body)?.check()
    }
}

nightjar_sdk::export_notifier!({{Type}});

#[cfg(test)]
mod tests {
    use super::*;
    use nightjar_sdk::testing::{HttpMock, event};

    /// The plugin under test.
    type P = {{Type}};

    #[test]
    fn events_are_posted_and_a_server_error_is_tried_again() {
        let text = "url = \"https://chat.example.org/hook\"";
        let config = P::configure(text).unwrap();
        let mock = HttpMock::install();
        mock.reply(503, "try later");
        let failed = P::deliver(&config, &[event(1, "task-failed")]).unwrap_err();
        assert!(failed.is_transient());
        assert!(P::deliver(&config, &[event(1, "task-failed")]).is_ok());
        assert_eq!(mock.requests().len(), 2);
    }

    #[test]
    fn a_url_that_is_not_http_is_refused_naming_the_key() {
        let e = P::configure("url = \"ftp://x\"").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("url"));
    }
}
