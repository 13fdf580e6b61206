//! A reply line read as its typed answer, or the daemon's error; a line that
//! does not decode is explained by the daemon's protocol version.

use serde::Deserialize;

use super::CallError;
use crate::api::{ApiError, ErrorKind, PROTOCOL, ReplyLine};

/// Decodes a reply line into `T`, or the daemon's error. A line that does
/// not decode is explained by its version when the versions differ.
pub fn decode<T: serde::de::DeserializeOwned>(line: &str) -> Result<T, CallError> {
    match serde_json::from_str::<ReplyLine<T>>(line) {
        Ok(r) if r.v == Some(PROTOCOL) => match (r.ok, r.error) {
            (Some(v), None) => Ok(v),
            (_, Some(message)) => Err(ApiError {
                kind: r.kind.unwrap_or(ErrorKind::Other),
                message,
            }
            .into()),
            (None, None) => {
                Err(ApiError::new(ErrorKind::Protocol, "the daemon sent an empty reply").into())
            }
        },
        // nightjar 0.1 cannot read this request and says so in words that
        // name no version: explain the mismatch, then quote it.
        Ok(ReplyLine {
            v: None,
            error: Some(message),
            ..
        }) => {
            let mut e = daemon_mismatch(None);
            e.message = format!("{} (it answered: {message})", e.message);
            Err(e.into())
        }
        // A newer daemon's own words: it explains a mismatch itself.
        Ok(ReplyLine {
            error: Some(message),
            kind,
            ..
        }) => Err(ApiError {
            kind: kind.unwrap_or(ErrorKind::Protocol),
            message,
        }
        .into()),
        Ok(r) => Err(daemon_mismatch(r.v).into()),
        Err(e) => {
            #[derive(Deserialize)]
            struct Head {
                #[serde(default)]
                v: Option<u32>,
                #[serde(default)]
                error: Option<String>,
            }
            match serde_json::from_str::<Head>(line) {
                Ok(Head { v, .. }) if v != Some(PROTOCOL) => Err(daemon_mismatch(v).into()),
                Ok(Head { error: Some(m), .. }) => Err(ApiError::new(ErrorKind::Other, m).into()),
                // Something answers, but not in this protocol: not a missing daemon.
                _ => Err(ApiError::new(
                    ErrorKind::Protocol,
                    format!(
                        "the daemon's reply does not decode ({e}); is the daemon of this release?"
                    ),
                )
                .into()),
            }
        }
    }
}

fn daemon_mismatch(daemon: Option<u32>) -> ApiError {
    let daemon = match daemon {
        Some(v) => format!("protocol {v}"),
        None => "protocol 1 (nightjar 0.1)".into(),
    };
    ApiError::new(
        ErrorKind::Protocol,
        format!(
            "the daemon speaks {daemon} but this nightjar ({}) speaks protocol {PROTOCOL}: restart the daemon from this release (`systemctl --user restart nightjar`), or use the `nightjar` that came with it",
            env!("CARGO_PKG_VERSION")
        ),
    )
}
