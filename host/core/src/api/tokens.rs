//! API tokens for the HTTP API: made through the socket (whose caller the
//! kernel names), so a user makes tokens for themselves only. The daemon
//! keeps each token's SHA-256 only; the token itself is shown once.

use serde::{Deserialize, Serialize};

/// Longest token name the daemon takes.
pub const MAX_NAME: usize = 100;

/// `token-create [--name N]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenCreate {
    /// What the token is for, for a person (`laptop`, `dashboard`).
    #[serde(default)]
    pub name: Option<String>,
}

/// A token just made: the only time its secret is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NewToken {
    /// The token's id (for `token revoke`).
    pub id: i64,
    /// The secret: `nj_` and 64 hex digits. Send it as
    /// `Authorization: Bearer <token>`.
    pub token: String,
}

/// `token-list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenList {}

/// `token-revoke ID`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenRevoke {
    /// The token's id.
    pub id: i64,
}

/// One token, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenRow {
    /// Its id.
    pub id: i64,
    /// Whose it is: uid.
    pub uid: u32,
    /// Whose it is: name.
    pub user: String,
    /// What it is for.
    pub name: String,
    /// When it was made (ms since the epoch).
    pub created_at: i64,
    /// When it was last used (to the minute), if ever.
    pub used_at: Option<i64>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}
