//! What a validator answers: findings, each with a severity, the file it is
//! about and a message for a person.

use std::fmt;

use serde::{Deserialize, Deserializer};

use crate::validator_abi as abi;

/// How much a [`Finding`] (or a notifier's [`Event`](crate::Event))
/// weighs. In a config it is written `"info"`, `"warning"` or `"error"`;
/// the default is `Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Severity {
    /// Shown, changes nothing.
    Info,
    /// Shown; the run still succeeds.
    Warning,
    /// The run fails as `validation-failed`.
    #[default]
    Error,
}

impl Severity {
    /// `"info"`, `"warning"` (or `"warn"`) or `"error"`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Severity> {
        match text.trim() {
            "info" => Some(Severity::Info),
            "warning" | "warn" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }

    /// The word a config writes for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Severity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::config::text_value(
            d,
            "a severity: \"error\", \"warning\" or \"info\"",
            Severity::parse,
        )
    }
}

/// One thing a validator found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How much it weighs.
    pub severity: Severity,
    /// The file it is about, relative to the output folder; `None` for the
    /// run as a whole.
    pub path: Option<String>,
    /// For a person: what was expected and what was found (the host keeps
    /// at most 1 KiB).
    pub message: String,
}

impl Finding {
    /// A finding about the file at `path` (relative to the output folder).
    pub fn new(severity: Severity, path: impl Into<String>, message: impl Into<String>) -> Finding {
        Finding {
            severity,
            path: Some(path.into()),
            message: message.into(),
        }
    }

    /// A finding about the run as a whole, naming no file.
    pub fn about_run(severity: Severity, message: impl Into<String>) -> Finding {
        Finding {
            severity,
            path: None,
            message: message.into(),
        }
    }

    /// An error about `path`: the run fails.
    pub fn error(path: impl Into<String>, message: impl Into<String>) -> Finding {
        Finding::new(Severity::Error, path, message)
    }

    /// A warning about `path`: shown, the run still succeeds.
    pub fn warning(path: impl Into<String>, message: impl Into<String>) -> Finding {
        Finding::new(Severity::Warning, path, message)
    }

    /// An info about `path`: shown, changes nothing.
    pub fn info(path: impl Into<String>, message: impl Into<String>) -> Finding {
        Finding::new(Severity::Info, path, message)
    }

    /// The contract's form of it.
    pub(crate) fn into_abi(self) -> abi::Finding {
        abi::Finding {
            severity: match self.severity {
                Severity::Info => abi::Severity::Info,
                Severity::Warning => abi::Severity::Warning,
                Severity::Error => abi::Severity::Error,
            },
            path: self.path,
            message: self.message,
        }
    }
}
