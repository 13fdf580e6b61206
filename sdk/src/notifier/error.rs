//! Why a delivery failed: worth another try, or never going to work.

use std::fmt;

use crate::notifier_abi as abi;

/// Why a delivery failed. The host treats a delivery as all or nothing: an
/// error means none of the call's events counts as delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryError {
    /// Worth trying again later (a timeout, a 5xx, a rate limit): the host
    /// keeps the events and retries with backoff.
    Transient(String),
    /// Will never work as configured (a bad key, a 4xx): the events go to
    /// the dead letters.
    Permanent(String),
}

impl DeliveryError {
    /// A [`DeliveryError::Transient`] saying `message`.
    pub fn transient(message: impl Into<String>) -> DeliveryError {
        DeliveryError::Transient(message.into())
    }

    /// A [`DeliveryError::Permanent`] saying `message`.
    pub fn permanent(message: impl Into<String>) -> DeliveryError {
        DeliveryError::Permanent(message.into())
    }

    /// Whether it is worth trying again.
    pub fn is_transient(&self) -> bool {
        matches!(self, DeliveryError::Transient(_))
    }

    /// What went wrong, for a person.
    pub fn message(&self) -> &str {
        match self {
            DeliveryError::Transient(m) | DeliveryError::Permanent(m) => m,
        }
    }

    /// The same kind of error with its message passed through `f` (to add
    /// context, or to redact a secret the message might quote).
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> DeliveryError {
        match self {
            DeliveryError::Transient(m) => DeliveryError::Transient(f(m)),
            DeliveryError::Permanent(m) => DeliveryError::Permanent(f(m)),
        }
    }

    /// The contract's form of it.
    pub(crate) fn into_abi(self) -> abi::DeliveryError {
        match self {
            DeliveryError::Transient(m) => abi::DeliveryError::Transient(m),
            DeliveryError::Permanent(m) => abi::DeliveryError::Permanent(m),
        }
    }
}

impl fmt::Display for DeliveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliveryError::Transient(m) => write!(f, "transient: {m}"),
            DeliveryError::Permanent(m) => write!(f, "permanent: {m}"),
        }
    }
}

impl std::error::Error for DeliveryError {}
