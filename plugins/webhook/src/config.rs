//! The `webhook` notifier's configuration and its checks.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use nightjar_sdk::{ConfigError, DeliveryError};
use serde::Deserialize;

/// The plugin's table (the host's own keys removed, secrets resolved).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where events are POSTed: `https://...` (`http://` only to loopback,
    /// which the host enforces).
    pub url: String,
    /// Extra headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// What the host resolved from the notifier's `secrets`.
    #[serde(default)]
    pub secrets: Secrets,
}

/// The resolved secrets.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Secrets {
    /// The shared signing secret: `whsec_<base64>` (decoded) or any other
    /// text (its UTF-8 bytes).
    pub signing: Option<String>,
    /// The whole `Authorization` header value (`Bearer ...`).
    pub authorization: Option<String>,
}

/// Headers the plugin sets itself or the transport owns: `headers` may not
/// name them (ASCII case ignored).
pub const RESERVED_HEADERS: &[&str] = &[
    "content-type",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "idempotency-key",
    "authorization",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
];

impl Config {
    /// Checks the URL, the headers and the secrets; errors name the key.
    pub fn check(&self) -> Result<(), ConfigError> {
        check_url(&self.url)?;
        for (name, value) in &self.headers {
            let key = if !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                format!("headers.{name}")
            } else {
                format!("headers.{name:?}")
            };
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(ConfigError::at(
                    key,
                    "is not a header name: letters, digits and !#$%&'*+-.^_`|~ only",
                ));
            }
            if RESERVED_HEADERS
                .iter()
                .any(|r| r.eq_ignore_ascii_case(name))
            {
                return Err(ConfigError::at(
                    key,
                    "is set by the plugin or the transport; remove it (an Authorization value goes in `secrets.authorization`)",
                ));
            }
            check_value(&key, value)?;
        }
        if let Some(auth) = &self.secrets.authorization {
            check_value("secrets.authorization", auth)?;
        }
        self.signing_key()
            .map_err(|e| ConfigError::at("secrets.signing", e.message().to_string()))?;
        Ok(())
    }

    /// The HMAC key: `None` without a signing secret.
    pub fn signing_key(&self) -> Result<Option<Vec<u8>>, DeliveryError> {
        let Some(secret) = &self.secrets.signing else {
            return Ok(None);
        };
        let key = match secret.strip_prefix("whsec_") {
            Some(encoded) => STANDARD.decode(encoded.trim()).map_err(|_| {
                DeliveryError::permanent(
                    "starts with `whsec_` but what follows is not base64; give the secret as the receiver shows it",
                )
            })?,
            None => secret.as_bytes().to_vec(),
        };
        if key.is_empty() {
            return Err(DeliveryError::permanent(
                "is empty; remove it to send unsigned, or give the receiver's secret",
            ));
        }
        Ok(Some(key))
    }

    /// The URL's host, for error messages (never the path or query, which
    /// may hold a token).
    pub fn url_host(&self) -> &str {
        let rest = self.url.split_once("://").map_or("", |(_, r)| r);
        rest.split(['/', '?', '#']).next().unwrap_or(rest)
    }
}

fn check_url(url: &str) -> Result<(), ConfigError> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let host = rest.and_then(|r| r.split(['/', '?', '#']).next());
    match host {
        Some(h) if !h.is_empty() && !url.chars().any(char::is_whitespace) => Ok(()),
        _ => Err(ConfigError::at(
            "url",
            format!(
                "`{}` is not an absolute https:// URL (http:// only to loopback)",
                nightjar_sdk::notifier::truncate(url, 100)
            ),
        )),
    }
}

fn check_value(key: &str, value: &str) -> Result<(), ConfigError> {
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(ConfigError::at(
            key,
            "holds a control character (a line break?); a header value is one line",
        ));
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
