//! The daemon's protocol: newline-delimited JSON over a unix socket (mode
//! 0600), one request line, one reply line, both carrying the protocol
//! version.
//!
//! A request line is `{"v":2,"req":{"verb":"show","id":4}}`; a reply line is
//! `{"v":2,"ok":...}` or `{"v":2,"error":"...","kind":"not-found"}`. Each
//! request type names its reply type through [`Call`], so the client decodes
//! a typed answer and the daemon cannot answer a verb with the wrong shape.
//! The error stays a plain string so that a client of another version still
//! prints it.

pub mod audit;
pub mod board;
pub mod class;
pub mod diff;
pub mod estimate;
pub mod figures;
pub mod findings;
pub mod forecast;
pub mod gc;
pub mod history;
pub mod logs;
pub mod manifest;
pub mod notify;
pub mod outputs;
pub mod report;
pub mod rerun;
pub mod tokens;
pub mod views;
pub mod why;
pub mod wire;

mod plugin_verbs;
mod request;
mod state;
mod wait;

pub use request::*;

use serde::{Deserialize, Serialize};

/// The protocol version this build speaks. Raised whenever a request or a
/// reply changes shape; client and daemon must agree.
///
/// | version | nightjar | change                                        |
/// |---------|---------|-----------------------------------------------|
/// | 1       | 0.1     | unversioned lines, untyped replies            |
/// | 2       | 0.2     | versioned lines, typed replies, error kinds   |
pub const PROTOCOL: u32 = 2;

/// Longest request line the daemon reads (1 MiB); a longer one is refused
/// and the connection closed.
pub const MAX_REQUEST: usize = 1024 * 1024;

/// A request as it travels: the version, then the request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RequestLine {
    /// The client's protocol version.
    pub v: u32,
    /// The request.
    pub req: Request,
}

/// What kind of failure an error reply reports; the CLI's exit status
/// follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The request names a task or run that does not exist.
    NotFound,
    /// The request is well formed but cannot be done: bad input, a task in
    /// the wrong state, a limit exceeded.
    Invalid,
    /// The caller may not do this to that task (another user's), or is not
    /// an administrator (`[users] admin_group`).
    Forbidden,
    /// The line is not a request of this protocol.
    BadRequest,
    /// Client and daemon speak different protocol versions.
    Protocol,
    /// The daemon is stopping.
    Unavailable,
    /// Something failed inside the daemon, not in the request: the store,
    /// SQLite or the file system (its log says more).
    Internal,
    /// A kind this build does not know (a newer daemon's).
    #[serde(other)]
    Other,
}

impl ErrorKind {
    /// The CLI's exit status for this kind (docs/src/guide/using.md#exit-statuses).
    pub fn exit_status(self) -> i32 {
        match self {
            ErrorKind::NotFound => 4,
            ErrorKind::Protocol => 5,
            ErrorKind::Unavailable => 3,
            ErrorKind::Forbidden => 6,
            ErrorKind::Internal => 7,
            ErrorKind::Invalid | ErrorKind::BadRequest | ErrorKind::Other => 1,
        }
    }
}

/// An error reply: what kind, and what to do, for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[error("{message}")]
pub struct ApiError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What went wrong and what to do.
    pub message: String,
}

impl ApiError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ApiError {
        ApiError {
            kind,
            message: message.into(),
        }
    }

    /// The error a daemon sends for a line of another protocol version
    /// (`None`: a line without a version, as nightjar 0.1 wrote).
    pub fn version_mismatch(client: Option<u32>) -> ApiError {
        let client = match client {
            Some(v) => format!("protocol {v}"),
            None => "protocol 1 (nightjar 0.1)".into(),
        };
        ApiError::new(
            ErrorKind::Protocol,
            format!(
                "this nightjar client speaks {client} but the daemon speaks protocol {PROTOCOL} (nightjar {}): use the `nightjar` that came with the daemon, or restart the daemon from the new version (`systemctl --user restart nightjar`)",
                env!("CARGO_PKG_VERSION")
            ),
        )
    }
}

/// A reply as it travels: the version, then the result or the error.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReplyLine<T> {
    /// The daemon's protocol version (absent from nightjar 0.1's replies).
    #[serde(default)]
    pub v: Option<u32>,
    /// The result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<T>,
    /// What went wrong, for a person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What kind of failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
}

impl<T> ReplyLine<T> {
    /// A successful reply.
    pub fn ok(value: T) -> ReplyLine<T> {
        ReplyLine {
            v: Some(PROTOCOL),
            ok: Some(value),
            error: None,
            kind: None,
        }
    }

    /// An error reply.
    pub fn err(e: ApiError) -> ReplyLine<T> {
        ReplyLine {
            v: Some(PROTOCOL),
            ok: None,
            error: Some(e.message),
            kind: Some(e.kind),
        }
    }
}

#[cfg(test)]
mod tests;
