//! API tokens: `nj_` and 64 hex digits (32 bytes from the kernel's
//! generator), kept as their SHA-256 only; the `token-*` verbs' handlers.

use sha2::{Digest, Sha256};

use crate::access::Caller;
use crate::api::tokens::{MAX_NAME, NewToken, TokenCreate, TokenRevoke, TokenRow};
use crate::api::{ApiError, Changed, ErrorKind};
use crate::daemon::Daemon;

/// Every token starts so (a secret scanner can spot one).
pub const PREFIX: &str = "nj_";

/// The SHA-256 of a token, hex.
pub fn hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A new token's text.
fn mint() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no random bytes for a token: {e}"))?;
    Ok(format!("{PREFIX}{}", hex(&bytes)))
}

/// Why a token is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not a token, unknown or revoked: the caller's (401).
    Invalid(String),
    /// The store could not say: the daemon's failure (500), not the token's.
    Unchecked(String),
}

impl Refused {
    /// What to tell the caller.
    pub fn message(&self) -> &str {
        match self {
            Refused::Invalid(m) | Refused::Unchecked(m) => m,
        }
    }
}

/// The uid a live token belongs to (marking it used), or why it is refused.
pub fn lookup(d: &Daemon, token: &str) -> Result<u32, Refused> {
    let well_formed = token
        .strip_prefix(PREFIX)
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if !well_formed {
        return Err(Refused::Invalid(
            "that is not a nightjar token (they look like `nj_` and 64 hex digits)".into(),
        ));
    }
    match d.store().token_use(&hash(token), d.now_ms()) {
        Ok(Some(t)) => Ok(t.uid),
        Ok(None) => Err(Refused::Invalid("unknown or revoked token".into())),
        Err(e) => {
            tracing::error!("token lookup: {e}");
            Err(Refused::Unchecked(format!(
                "cannot check the token now: {e} (a failure inside the daemon, not in the request: try again, and if it lasts, the daemon's log says more)"
            )))
        }
    }
}

/// `token-create`: a token for the caller, shown once; audited.
pub fn create(d: &Daemon, caller: &Caller, r: &TokenCreate) -> anyhow::Result<NewToken> {
    let name = r.name.as_deref().unwrap_or("").trim();
    let name = if name.is_empty() { "unnamed" } else { name };
    if name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(ApiError::new(
            ErrorKind::Invalid,
            format!("a token's name is at most {MAX_NAME} printable characters"),
        )
        .into());
    }
    let token = mint()?;
    let id = d
        .store()
        .token_create(caller.uid, &caller.name, name, &hash(&token), d.now_ms())?;
    crate::api::audit(
        d,
        caller,
        "token-create",
        None,
        format!("token {id} ({name})"),
    );
    Ok(NewToken { id, token })
}

/// `token-list`: the caller's tokens; an administrator's: everyone's.
pub fn list(d: &Daemon, caller: &Caller) -> anyhow::Result<Vec<TokenRow>> {
    Ok(d.store()
        .token_list((!caller.admin).then_some(caller.uid))?)
}

/// `token-revoke`: one's own token, or any for an administrator; audited.
pub fn revoke(d: &Daemon, caller: &Caller, r: &TokenRevoke) -> anyhow::Result<Changed> {
    let (owner, revoked) = d.store().token_owner(r.id)?;
    if owner != caller.uid && !caller.admin {
        return Err(ApiError::new(
            ErrorKind::Forbidden,
            format!(
                "token {} belongs to {}, not to {}: only its owner or an administrator may revoke it",
                r.id,
                crate::users::name_of(owner),
                caller.name
            ),
        )
        .into());
    }
    if revoked {
        return Ok(Changed { tasks: 0 });
    }
    d.store().token_revoke(r.id, d.now_ms())?;
    let whose = crate::users::name_of(owner);
    crate::api::audit(
        d,
        caller,
        "token-revoke",
        None,
        format!("token {} of {whose}", r.id),
    );
    Ok(Changed { tasks: 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_random_hex_and_kept_as_sha256() {
        let a = mint().unwrap();
        assert!(a.starts_with(PREFIX) && a.len() == 3 + 64, "{a}");
        assert_ne!(a, mint().unwrap());
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
